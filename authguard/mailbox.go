package authguard

import (
	"strings"
)

// A mailboxRule is what one provider documents about the spellings of an
// address that deliver to one mailbox, beyond the "+" tags that every domain
// has dropped (see ParseDestination). mailboxRules lists them.
type mailboxRule struct {
	// Provider is the provider's name, as docs/otp.md's table shows it.
	Provider string
	// Domains are the provider's domains, as ParseDestination normalises
	// them (lower case, A-labels, no trailing dot).
	Domains []string
	// Canonical, when not "", is the one domain that all of Domains are
	// counted as: they are one mailbox domain. When "", each domain stays
	// its own.
	Canonical string
	// Ignore holds the ASCII characters that the provider ignores in a
	// local part: the mailbox name keeps none of them.
	Ignore string
	// Subdomains reports whether anything@name.domain delivers to
	// name@domain for a domain of Domains (Fastmail's subdomain
	// addressing): such an address counts as the mailbox name@domain,
	// whatever its local part, and whatever labels stand left of name.
	Subdomains bool
}

// mailboxRules is the table of providers whose documented addressing rules
// Destination.Mailbox applies, one row per provider. A rule is here only
// when the provider documents it; the sources are in the comment on each
// row. Merging two spellings that are in fact two mailboxes gives them one
// quota; leaving out a rule a provider has gives its users many.
//
// Left out, and why:
//   - Outlook.com, Hotmail, Live and MSN (Microsoft): Microsoft documents
//     plus addressing (on Outlook.com since 2013, on Exchange Online since
//     2020), which the rule for every domain covers. Dots count, and
//     outlook.com, hotmail.com and live.com addresses are separate aliases
//     that may belong to different people, so no row.
//   - Yahoo: it has no "+" addressing (mail to a tag bounces, and its user
//     names cannot hold "+", so dropping a tag merges nothing). Its disposable addresses,
//     basename-keyword@yahoo.com, deliver only once their owner has
//     created each keyword: an attacker cannot mint them. Dots count.
//   - Google Workspace and other hosted domains: dots count there, and a
//     domain's separator (qmail's "-", a catch-all) is its own
//     configuration, which tollgate cannot see.
//   - Fastmail's other domains (sent.com, fastmail.net, messagingengine.com
//     and the rest): subdomain addressing works there too, but the list is
//     long and changes; only the two main domains are rows. Customers' own
//     domains at Fastmail or Proton choose their own handling.
var mailboxRules = []mailboxRule{
	// Gmail Help ("Dots don't matter in Gmail addresses"): dots in a
	// gmail.com user name are ignored, j.doe and jdoe are one account; this
	// is for gmail.com only, not for work or school (Workspace) addresses.
	// googlemail.com is the name Google Mail had in Germany and the UK from
	// 2005: a name registered at one domain cannot be registered at the
	// other, and mail to either domain reaches the user; the Gmail blog
	// (May 2010) let UK users switch to "the matching @gmail.com" address.
	{Provider: "Gmail", Domains: []string{"gmail.com", "googlemail.com"}, Canonical: "gmail.com", Ignore: "."},
	// Proton Support ("How to change your username",
	// proton.me/support/change-username): ".", "_" and "-" are "treated as
	// transparent by our service ... username is the same as user_name and
	// user.name ... none of these variations can be used for a different
	// account". Proton Support ("Types of email addresses and aliases"):
	// a user's address at proton.me or protonmail.com has the short form
	// name@pm.me, and users from before 2016 also have name@protonmail.ch.
	// One pm.me name cannot be two users' short form, so a name at any of
	// the four domains is one user's, or no one's.
	{Provider: "Proton Mail", Domains: []string{"proton.me", "protonmail.com", "protonmail.ch", "pm.me"}, Canonical: "proton.me", Ignore: "._-"},
	// Apple Support ("About your @icloud.com, @me.com, and @mac.com email
	// addresses", support.apple.com/118230): accounts from before September
	// 2012 have their me.com and icloud.com addresses, and those that kept
	// a mac.com address all three, with one account; accounts since have
	// icloud.com alone. So a name at me.com or mac.com is the icloud.com
	// name's account, or no one's. "+" tags arrive (the rule for every
	// domain); dots count.
	{Provider: "iCloud Mail", Domains: []string{"icloud.com", "me.com", "mac.com"}, Canonical: "icloud.com"},
	// Fastmail Help ("Plus addressing and subdomain addressing"): mail to
	// whateveryoulike@username.domain.tld is delivered as
	// username+whateveryoulike@domain.tld, for the user name and any alias,
	// on Fastmail domains; fastmail.fm is the older domain, which the
	// Fastmail blog (2008-01-24) gives the same example for. The blog also
	// lets joe_citizen use the label joe-citizen, which counts here as the
	// mailbox joe-citizen: that user has two mailboxes, not one per label.
	{Provider: "Fastmail", Domains: []string{"fastmail.com", "fastmail.fm"}, Subdomains: true},
}

// mailboxRuleOf maps each domain of mailboxRules to its row;
// subdomainParents lists, with a dot in front, the domains whose
// subdomains are addresses of one mailbox.
var mailboxRuleOf, subdomainParents = func() (map[string]*mailboxRule, []string) {
	m := map[string]*mailboxRule{}
	var parents []string
	for i := range mailboxRules {
		r := &mailboxRules[i]
		for _, d := range r.Domains {
			if m[d] != nil {
				panic("authguard: domain " + d + " in two mailbox rules")
			}
			m[d] = r
			if r.Subdomains {
				parents = append(parents, "."+d)
			}
		}
	}
	return m, parents
}()

// mailboxDetail is the detail for an address whose mailbox name, what is
// left of its local part once its tag is dropped and its provider's rules
// applied, names no mailbox.
const mailboxDetail = "must name a mailbox: the local part before any + tag must be a valid local part of its own, not empty, ending in a dot, or only separators its provider ignores"

// mailboxOf returns the mailbox of an e-mail address whose local part and
// domain ParseDestination has normalised and checked, and whose Normalized
// is normalized: normalized itself when no rule changes it. See
// ParseDestination for the rules.
func mailboxOf(normalized, local, domain string) (string, error) {
	name, _, _ := strings.Cut(local, "+")
	mdomain := domain
	rule := mailboxRuleOf[domain]
	if rule == nil {
		for _, p := range subdomainParents {
			if sub, ok := strings.CutSuffix(domain, p); ok {
				name = sub[strings.LastIndexByte(sub, '.')+1:]
				mdomain = p[1:]
				rule = mailboxRuleOf[mdomain]
				break
			}
		}
	}
	if rule != nil {
		if rule.Canonical != "" {
			mdomain = rule.Canonical
		}
		if rule.Ignore != "" && strings.ContainsAny(name, rule.Ignore) {
			name = strings.Map(func(r rune) rune {
				if strings.ContainsRune(rule.Ignore, r) {
					return -1
				}
				return r
			}, name)
		}
	}
	if name == local && mdomain == domain {
		return normalized, nil
	}
	if !mailboxName(name) {
		return "", destinationError(mailboxDetail)
	}
	return name + "@" + mdomain, nil
}

// mailboxName reports whether name, part of a local part that
// normalizeLocalPart accepted, is a local part that it accepts as it is:
// a dot-atom that NormalizeAccount leaves alone. Dropping a tag can leave
// "" ("+x@") or a dot at the end ("alice.+x@"), and dropping characters
// can leave a word that breaks the Bidi Rule or is no longer NFC; such a
// name spells no mailbox that has an address of its own, and taking it
// would let its tags be many destinations again.
func mailboxName(name string) bool {
	if name == "" || !dotAtom(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			n, err := NormalizeAccount(name)
			return err == nil && n == name
		}
	}
	return true
}
