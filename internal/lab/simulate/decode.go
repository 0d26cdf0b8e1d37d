package simulate

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// A scenario decodes into structs: each mapping of the format is a struct
// whose fields are tagged with their keys, and each field's type decodes
// and checks its own value (fieldDecoder), naming the value's line and path
// in its errors. decodeMapping fills such a struct from a mapping node.

// fieldDecoder is implemented by the type of every field of a struct that
// decodeMapping fills: decode decodes the value n of the key path names.
type fieldDecoder interface {
	decode(n *yaml.Node, path string) error
}

var (
	nodeType    = reflect.TypeFor[*yaml.Node]()
	decoderType = reflect.TypeFor[fieldDecoder]()
)

// decodeMapping decodes mapping n into the struct out points to, key by key
// in file order: the field tagged yaml:"key" decodes each key's value (a
// field of type *yaml.Node just keeps it, to be decoded later). It returns
// the value node of each key present, for the checks that span keys and
// for their lines. Unknown and duplicate keys are errors; want is what n
// should have been, for an error when it is not a mapping.
//
// yaml.v3's own (*yaml.Node).Decode is not used for the structs: it does not
// refuse unknown keys (only a yaml.Decoder's KnownFields does, and it goes
// on after one), it never calls an Unmarshaler for a null value, and its
// messages name Go types; a scenario's errors name its keys.
func decodeMapping(n *yaml.Node, path, want string, out any) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errAt(n, path, "want %s", want)
	}
	st := reflect.ValueOf(out).Elem()
	fields := make(map[string]reflect.Value, st.NumField())
	for i := range st.NumField() {
		f, sf := st.Field(i), st.Type().Field(i)
		if f.Type() != nodeType && !f.Addr().Type().Implements(decoderType) {
			panic(fmt.Sprintf("simulate: field %s of %v is neither a *yaml.Node nor a fieldDecoder", sf.Name, st.Type()))
		}
		fields[sf.Tag.Get("yaml")] = f
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, errAt(k, path, "keys must be plain words")
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		f, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for name := range fields {
				known = append(known, name)
			}
			slices.Sort(known)
			return nil, errAt(k, path, "unknown field %q (known: %s)", k.Value, strings.Join(known, ", "))
		}
		if prev := seen[k.Value]; prev != nil {
			return nil, errAt(k, p, "set twice (first on line %d)", prev.Line)
		}
		seen[k.Value] = v
		if f.Type() == nodeType {
			f.Set(reflect.ValueOf(v))
			continue
		}
		if err := f.Addr().Interface().(fieldDecoder).decode(v, p); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// lineOf is the line of n, or 0 for none.
func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// The scalars of the format.

func scalar(n *yaml.Node, path, want string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", errAt(n, path, "want %s", want)
	}
	return n.Value, nil
}

func nonEmpty(n *yaml.Node, path string) (string, error) {
	s, err := scalar(n, path, "a string")
	if err == nil && strings.TrimSpace(s) == "" {
		err = errAt(n, path, "must not be empty")
	}
	return s, err
}

func integer(n *yaml.Node, path string, lo, hi int64) (int64, error) {
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, errAt(n, path, "want a whole number, not %q", n.Value)
	}
	if v < lo || v > hi {
		return 0, errAt(n, path, "must be between %d and %d, not %d", lo, hi, v)
	}
	return v, nil
}

func boolean(n *yaml.Node, path string) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		return false, errAt(n, path, "want true or false, not %q", n.Value)
	}
	return b, nil
}

func duration(n *yaml.Node, path string) (time.Duration, error) {
	s, err := scalar(n, path, "a duration such as 30s, 15m, 24h or 7d")
	if err != nil {
		return 0, err
	}
	d, err := config.ParseDuration(s)
	if err != nil {
		return 0, errAt(n, path, "%v", err)
	}
	return d, nil
}

// The types of the fields: each decodes one value and checks it.

// text is a string that is not empty.
type text string

func (t *text) decode(n *yaml.Node, path string) error {
	s, err := nonEmpty(n, path)
	*t = text(s)
	return err
}

// actorName is an actor's name.
type actorName string

func (a *actorName) decode(n *yaml.Node, path string) error {
	s, err := nonEmpty(n, path)
	if err == nil && !actorNameRE.MatchString(s) {
		err = errAt(n, path, "invalid name %q (use up to 32 letters, digits, '_' and '-', starting with a letter)", s)
	}
	*a = actorName(s)
	return err
}

// actorRef names another actor.
type actorRef string

func (a *actorRef) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "the name of another actor")
	if err == nil && !actorNameRE.MatchString(s) {
		err = errAt(n, path, "invalid actor name %q", s)
	}
	*a = actorRef(s)
	return err
}

// toggle is true or false.
type toggle bool

func (f *toggle) decode(n *yaml.Node, path string) error {
	b, err := boolean(n, path)
	*f = toggle(b)
	return err
}

// fresh is accounts' fresh: only true.
type fresh bool

func (f *fresh) decode(n *yaml.Node, path string) error {
	b, err := boolean(n, path)
	if err == nil && !b {
		err = errAt(n, path, "only true is meaningful (leave fresh out instead)")
	}
	*f = fresh(b)
	return err
}

// seed is a scenario's seed.
type seed uint64

func (s *seed) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 0, math.MaxInt64)
	*s = seed(v)
	return err
}

// maxEntries is store.max_entries.
type maxEntries int

func (m *maxEntries) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 1, MaxStoreEntries)
	*m = maxEntries(v)
	return err
}

// count is a number of generated things: accounts, addresses, numbers.
type count int

func (c *count) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 1, MaxGenerated)
	*c = count(v)
	return err
}

// burst is an actor's burst.
type burst int

func (b *burst) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 1, MaxBurst)
	*b = burst(v)
	return err
}

// typos is an actor's typos.
type typos int

func (t *typos) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 0, MaxTypos)
	*t = typos(v)
	return err
}

// probability is a number from 0 to 1.
type probability float64

func (p *probability) decode(n *yaml.Node, path string) error {
	var f float64
	if n.Kind != yaml.ScalarNode || n.Decode(&f) != nil || !(f >= 0 && f <= 1) {
		return errAt(n, path, "want a probability between 0 and 1, not %q", n.Value)
	}
	*p = probability(f)
	return nil
}

// offset is a duration such as an actor's start and stop.
type offset time.Duration

func (o *offset) decode(n *yaml.Node, path string) error {
	d, err := duration(n, path)
	*o = offset(d)
	return err
}

// interval is a duration of more than 0s: an actor's every.
type interval time.Duration

func (iv *interval) decode(n *yaml.Node, path string) error {
	d, err := duration(n, path)
	if err == nil && d <= 0 {
		err = errAt(n, path, "must be more than 0s")
	}
	*iv = interval(d)
	return err
}

// span is a scenario's duration.
type span time.Duration

func (s *span) decode(n *yaml.Node, path string) error {
	d, err := duration(n, path)
	if err != nil {
		return err
	}
	if d <= 0 || d > MaxDuration {
		return errAt(n, path, "must be more than 0s and at most 31d, not %v", d)
	}
	*s = span(d)
	return nil
}

// rate is an actor's rate.
type rate config.Rate

func (r *rate) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "a rate such as 1/s")
	if err != nil {
		return err
	}
	v, err := config.ParseRate(s)
	if err != nil || v.Per == 0 {
		return errAt(n, path, "invalid rate %q (use N/s, N/m or N/h)", s)
	}
	*r = rate(v)
	return nil
}

// channel is a send actor's channel.
type channel authguard.Channel

func (c *channel) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "sms, voice, whatsapp or email")
	if err != nil {
		return err
	}
	ch, err := authguard.ParseChannel(s)
	if err != nil {
		return errAt(n, path, "invalid channel %q (use sms, voice, whatsapp or email)", s)
	}
	*c = channel(ch)
	return nil
}

// outcome is an actor's outcome.
type outcome authguard.Outcome

func (o *outcome) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "failure or success")
	if err != nil {
		return err
	}
	v, err := authguard.ParseOutcome(s)
	if err != nil {
		return errAt(n, path, "invalid outcome %q (use failure or success)", s)
	}
	*o = outcome(v)
	return nil
}

// ipv6Prefix is an IPv6 prefix such as 2001:db8::/48, masked.
type ipv6Prefix netip.Prefix

func (p *ipv6Prefix) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "an IPv6 prefix such as 2001:db8::/48")
	if err != nil {
		return err
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil || !pfx.Addr().Is6() || pfx.Addr().Is4In6() || pfx.Addr().Zone() != "" {
		return errAt(n, path, "invalid IPv6 prefix %q (use e.g. 2001:db8::/48)", s)
	}
	*p = ipv6Prefix(pfx.Masked())
	return nil
}

// freshPrefix is fresh_ipv6_in: an IPv6 prefix of more than one address.
type freshPrefix netip.Prefix

func (p *freshPrefix) decode(n *yaml.Node, path string) error {
	var pfx ipv6Prefix
	if err := pfx.decode(n, path); err != nil {
		return err
	}
	if netip.Prefix(pfx).Bits() == 128 {
		return errAt(n, path, "%s holds one address (list it instead)", netip.Prefix(pfx))
	}
	*p = freshPrefix(pfx)
	return nil
}

// phone is a phone number in international format, checked by the
// destination it is for.
type phone string

func (p *phone) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "a phone number in international format")
	*p = phone(s)
	return err
}

// share is solves_captcha: true (1), false (0) or the share of CAPTCHAs
// solved, from 0 to 1.
type share float64

func (sh *share) decode(n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		b, err := boolean(n, path)
		*sh = 0
		if b {
			*sh = 1
		}
		return err
	}
	var f float64
	if n.Kind != yaml.ScalarNode || n.Decode(&f) != nil || !(f >= 0 && f <= 1) {
		return errAt(n, path, "want true, false or the share of CAPTCHAs solved, from 0 to 1, not %q", n.Value)
	}
	*sh = share(f)
	return nil
}

// reportToken is an actor's report_token.
type reportToken ReportToken

func (r *reportToken) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "own, none, foreign or skip")
	if err != nil {
		return err
	}
	i := slices.Index(reportTokenNames[:], s)
	if i < 0 {
		return errAt(n, path, "invalid report_token %q (use own, none, foreign or skip)", s)
	}
	*r = reportToken(i)
	return nil
}

// replays is an actor's report_replays.
type replays int

func (r *replays) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 0, MaxReplays)
	*r = replays(v)
	return err
}

// instance is an actor's instance; the scenario checks it against its
// instances.
type instance int

func (i *instance) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 1, MaxInstances)
	*i = instance(v)
	return err
}

// instances is a scenario's instances.
type instances int

func (i *instances) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 1, MaxInstances)
	*i = instances(v)
	return err
}

// account is one account identifier, as the engine accepts it.
type account string

func (a *account) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "an account identifier")
	if err != nil {
		return err
	}
	if _, err := authguard.NormalizeAccount(s); err != nil {
		return errAt(n, path, "invalid account %q", s)
	}
	*a = account(s)
	return nil
}

// ownSuccess is an actor's own_success.
type ownSuccess OwnSuccess

func (o *ownSuccess) decode(n *yaml.Node, path string) error {
	var f struct {
		Account     account `yaml:"account"`
		Every       count   `yaml:"every"`
		DeviceToken toggle  `yaml:"device_token"`
	}
	const want = "{account: ACCOUNT, every: N, device_token: false}"
	seen, err := decodeMapping(n, path, want, &f)
	if err != nil {
		return err
	}
	for _, k := range []string{"account", "every"} {
		if seen[k] == nil {
			return errAt(n, path, "%s is required (want %s)", k, want)
		}
	}
	*o = ownSuccess{Account: string(f.Account), Every: int(f.Every), DeviceToken: bool(f.DeviceToken)}
	return nil
}

// secondPhase is a rate actor's second_phase; the actor checks its time.
type secondPhase SecondPhase

// phaseLogins is second_phase.logins.
type phaseLogins int

func (p *phaseLogins) decode(n *yaml.Node, path string) error {
	v, err := integer(n, path, 1, MaxPhaseLogins)
	*p = phaseLogins(v)
	return err
}

func (sp *secondPhase) decode(n *yaml.Node, path string) error {
	var f struct {
		At     offset      `yaml:"at"`
		Logins phaseLogins `yaml:"logins"`
	}
	const want = "{at: OFFSET, logins: N}"
	seen, err := decodeMapping(n, path, want, &f)
	if err != nil {
		return err
	}
	for _, k := range []string{"at", "logins"} {
		if seen[k] == nil {
			return errAt(n, path, "%s is required (want %s)", k, want)
		}
	}
	*sp = secondPhase{At: time.Duration(f.At), Logins: int(f.Logins)}
	return nil
}

// tenantRE is the API's tenant name (authguard refuses others).
var tenantRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// tenant is an actor's tenant.
type tenant string

func (tn *tenant) decode(n *yaml.Node, path string) error {
	s, err := scalar(n, path, "a tenant name")
	if err == nil && !tenantRE.MatchString(s) {
		err = errAt(n, path, "invalid tenant %q (use 1 to 64 lower-case letters, digits, '-' and '_', starting with a letter or digit)", s)
	}
	*tn = tenant(s)
	return err
}
