//go:build ignore

// gen_go_fixtures writes go_fixtures.json: what Go's net/netip and
// encoding/json answer for many inputs, which the TypeScript tests compare
// their own ports against. Run from clients/typescript:
//
//	go run ./test/testdata/gen_go_fixtures.go > test/testdata/go_fixtures.json
package main

import (
	"encoding/json"
	"math/rand"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

type addrCase struct {
	In       string `json:"in"`
	OK       bool   `json:"ok"`
	String   string `json:"string,omitempty"`
	Is4      bool   `json:"is4,omitempty"`
	Is4In6   bool   `json:"is4in6,omitempty"`
	Unmapped string `json:"unmapped,omitempty"`
	Prefix64 string `json:"prefix64,omitempty"`
	PortOK   bool   `json:"port_ok"`
	PortAddr string `json:"port_addr,omitempty"`
}

type prefixCase struct {
	In       string          `json:"in"`
	OK       bool            `json:"ok"`
	String   string          `json:"string,omitempty"`
	Masked   string          `json:"masked,omitempty"`
	Contains map[string]bool `json:"contains,omitempty"`
}

type jsonCase struct {
	In  string `json:"in"`
	Out string `json:"out"`
}

func main() {
	r := rand.New(rand.NewSource(1))
	seeds := []string{
		"", "0.0.0.0", "1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3.04", "1.2.3", "1.2.3.4.5",
		"1..2.3", ".1.2.3", "1.2.3.", "1.2.3.4%eth0", "::", "::1", "1::", "::ffff:1.2.3.4", "::ffff:01.2.3.4",
		"::ffff:1.2.3.4%eth0", "2001:db8::1", "2001:DB8::1", "2001:0db8:0000:0000:0000:0000:0000:0001",
		"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1", "2001:0:0:1::1", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9",
		"1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6::7:8", "1::2::3", ":1:2", "1:2:", "12345::1",
		"fe80::1%eth0", "fe80::1%", "%eth0", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:1.2.3.4",
		"1:2:3:4:5:6:7:1.2.3.4", "::ffff:1.2.3", "64:ff9b::1.2.3.4", "0:0:0:0:0:ffff:102:304", "::ffff:0:0",
		"0::0", "[::1]", "1.2.3.4:80", "[::1]:80", "[1.2.3.4]:80", "::1:80", "[fe80::1%eth0]:443",
		"1.2.3.4:65535", "1.2.3.4:65536", "1.2.3.4:0080", "[::1]:", ":80", "1.2.3.4:+80", "a.b.c.d",
		"1:0:0:2:0:0:0:3", "1:0:0:0:2:0:0:3", "0:0:1:0:0:0:0:0", "1:0:0:0:0:0:0:0", "0:0:0:0:0:0:0:1",
		"::0:0:1", "ffff::", "FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF", "00000::1", "0000::1", "::ffff:255.255.255.255",
	}
	alphabet := "0123456789abcdefABCDEFx:.%[]/ "
	var inputs []string
	inputs = append(inputs, seeds...)
	for i := 0; i < 1500; i++ {
		var b strings.Builder
		n := 1 + r.Intn(24)
		for j := 0; j < n; j++ {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	// Mutations of valid addresses: drop, duplicate or replace one byte.
	valid := []string{"203.0.113.9", "2001:db8:1::9", "::ffff:10.0.0.1", "fe80::1%eth0", "1:2:3:4:5:6:7:8", "[2001:db8::1]:4711", "10.0.0.1:80"}
	for i := 0; i < 1500; i++ {
		s := valid[r.Intn(len(valid))]
		p := r.Intn(len(s))
		switch r.Intn(3) {
		case 0:
			s = s[:p] + s[p+1:]
		case 1:
			s = s[:p] + s[p:p+1] + s[p:]
		default:
			s = s[:p] + string(alphabet[r.Intn(len(alphabet))]) + s[p+1:]
		}
		inputs = append(inputs, s)
	}
	// Random addresses with runs of zero groups, written out in full, to
	// check the canonical (RFC 5952) text.
	for i := 0; i < 800; i++ {
		var groups [8]string
		for j := range groups {
			if r.Intn(2) == 0 {
				groups[j] = "0"
			} else {
				groups[j] = strconv.FormatUint(uint64(r.Intn(1<<16)>>(4*r.Intn(4))), 16)
			}
		}
		s := strings.Join(groups[:], ":")
		if r.Intn(4) == 0 {
			s = strings.ToUpper(s)
		}
		inputs = append(inputs, s)
	}
	var addrs []addrCase
	seen := map[string]bool{}
	for _, in := range inputs {
		if seen[in] {
			continue
		}
		seen[in] = true
		c := addrCase{In: in}
		if a, err := netip.ParseAddr(in); err == nil {
			c.OK, c.String, c.Is4, c.Is4In6 = true, a.String(), a.Is4(), a.Is4In6()
			u := a.Unmap().WithZone("")
			c.Unmapped = u.String()
			if !u.Is4() {
				p, _ := u.Prefix(64)
				c.Prefix64 = p.String()
			}
		}
		if ap, err := netip.ParseAddrPort(in); err == nil {
			c.PortOK, c.PortAddr = true, ap.Addr().String()
		}
		addrs = append(addrs, c)
	}
	probes := []string{"10.0.0.1", "10.255.255.255", "11.0.0.0", "0.0.0.0", "192.0.2.1", "::ffff:10.0.0.1", "2001:db8::1",
		"2001:db8:ffff::1", "2001:db9::", "::", "::1", "fe80::1", "ff02::1", "128.0.0.0", "127.255.255.255"}
	pinputs := []string{"10.0.0.0/8", "10.1.2.3/8", "10.0.0.0/08", "10.0.0.0/-8", "10.0.0.0/+8", "10.0.0.0/33", "10.0.0.0/32",
		"10.0.0.0/0", "0.0.0.0/0", "::/0", "::/128", "::/129", "2001:db8::/32", "2001:db8:ffff::/48", "2001:db8::1/64",
		"::ffff:10.0.0.0/104", "::ffff:0.0.0.0/96", "::ffff:0.0.0.0/95", "fe80::1%eth0/64", "10.0.0.1", "10.0.0.0/",
		"/8", "10.0.0.0/8/8", "1.2.3.4/1", "128.0.0.0/1", "255.255.255.255/31", "2001:db8::/0", "10.0.0.0/ 8",
		"10.0.0.0/8 ", "10.0.0.0/99999999999999999999", "::ffff:1.2.3.4/128", "::ffff:1.2.3.4/32"}
	for i := 0; i < 400; i++ {
		pinputs = append(pinputs, addrs[r.Intn(len(addrs))].In+"/"+string("0123456789"[r.Intn(10)])+string("0123456789/"[r.Intn(11)]))
	}
	var prefixes []prefixCase
	for _, in := range pinputs {
		c := prefixCase{In: in}
		if p, err := netip.ParsePrefix(in); err == nil {
			c.OK, c.String, c.Masked = true, p.String(), p.Masked().String()
			c.Contains = map[string]bool{}
			for _, pr := range probes {
				c.Contains[pr] = p.Masked().Contains(netip.MustParseAddr(pr))
			}
		}
		prefixes = append(prefixes, c)
	}
	jsonIn := []string{"Too Many Requests", "a<b>&c", "quote \" back \\ slash", "\b\f\n\r\t\x00\x01\x1f\x7f", "\u2028\u2029", "é ü ✓ 🙂", "about:blank"}
	var jsonCases []jsonCase
	for _, in := range jsonIn {
		b, _ := json.Marshal(in)
		jsonCases = append(jsonCases, jsonCase{In: in, Out: string(b)})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(map[string]any{
		"about":    "Generated by gen_go_fixtures.go with " + "Go's net/netip and encoding/json; do not edit.",
		"addrs":    addrs,
		"prefixes": prefixes,
		"json":     jsonCases,
	})
}
