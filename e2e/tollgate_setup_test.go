package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// The route specs shipped in examples/proxy, used as shipped.
const (
	djangoRoutes = "django-admin.yaml"
	wikiRoutes   = "dokuwiki.yaml"
)

// secret is every instance's TOLLGATE_SECRET: the pair on Redis must share
// it, to read each other's device tokens and challenges.
const secret = "tollgate-e2e-secret-of-at-least-32-bytes"

// tollgate is a tollgate serve process with a proxy section.
type tollgate struct {
	*proc
	proxy  string // the proxy's base URL
	api    string // the API's, on loopback
	config string // its config file
}

// startTollgate runs tollgate serve with examples/proxy/spec as its
// config, changed only where this machine differs: the proxy's listen
// address (a free loopback port) and upstream, the API on a free loopback
// port, the device cookie without __Host- and Secure (plain HTTP on
// loopback), and 127.0.0.1 as a trusted proxy hop writing
// X-Forwarded-For, so that each simulated end user has an address of its
// own. With store set, the state is in that Redis; else in memory. Each
// edit then changes the file's root mapping further.
func startTollgate(w *world, name, upstream, spec string, store *redistest.Instance, edits ...func(root *yaml.Node)) (*tollgate, error) {
	dir := w.sub("tollgate-" + name)
	src, err := os.ReadFile(filepath.Join("..", "examples", "proxy", spec))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("examples/proxy/%s: %w", spec, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("examples/proxy/%s: not a config file (a mapping)", spec)
	}
	root := doc.Content[0]
	px := mapping(root, "proxy")
	if px == nil {
		return nil, fmt.Errorf("examples/proxy/%s: no proxy section", spec)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	set(px, "listen", scalar(listen))
	set(px, "upstream", scalar(upstream))
	set(px, "trusted_proxies", seq(scalar("127.0.0.1/32")))
	set(px, "client_ip_header", scalar("x-forwarded-for"))
	cookie := mapping(px, "device_cookie")
	if cookie == nil {
		cookie = &yaml.Node{Kind: yaml.MappingNode}
		set(px, "device_cookie", cookie)
	}
	set(cookie, "insecure", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	for _, edit := range edits {
		edit(root)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, err
	}
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	t := &tollgate{proxy: "http://" + listen, api: "http://127.0.0.1:" + strconv.Itoa(apiPort), config: filepath.Join(dir, "tollgate.yaml")}
	if err := os.WriteFile(t.config, out, 0o644); err != nil {
		return nil, err
	}
	env := []string{"TOLLGATE_SECRET=" + secret, "TOLLGATE_LISTEN=127.0.0.1:" + strconv.Itoa(apiPort)}
	if store != nil {
		env = append(env, "TOLLGATE_REDIS_URL=redis://"+store.Addr)
	}
	t.proc, err = w.spawn("tollgate-"+name, dir, dir, env, w.bin, "serve", "-config", t.config)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(t.proc, t.api+"/readyz", 200, time.Minute); err != nil {
		return nil, err
	}
	if err := waitHTTP(t.proc, t.proxy+"/.tollgate-e2e-ready", 404, time.Minute); err != nil {
		return nil, err
	}
	return t, nil
}

// mapping is the mapping under key in m, or nil.
func mapping(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	return nil
}

// set sets key in the mapping m to v.
func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func seq(items ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Content: items} }

// metric is the sum of the API's /metrics samples of name whose labels
// include every one of labels ("route", "dokuwiki", ...): what the proxy
// says it did, beside what the application counted.
func (t *tollgate) metric(tt *testing.T, name string, labels ...string) float64 {
	tt.Helper()
	resp, err := http.Get(t.api + "/metrics")
	if err != nil {
		tt.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tt.Fatal(err)
	}
	sum := 0.0
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && strings.Contains(line, labels[i]+`="`+labels[i+1]+`"`)
		}
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}
