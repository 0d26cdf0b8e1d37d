package breached

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/breached/hibp"
)

// The errors of Range, checked with errors.Is.
var (
	// ErrOff: neither a corpus nor an upstream is configured.
	ErrOff = errors.New("breached: no corpus and no upstream configured")
	// ErrBadPrefix: the prefix is not exactly 5 hex digits.
	ErrBadPrefix = errors.New("breached: the prefix is not 5 hex digits")
	// ErrUnavailable: the upstream did not answer a usable range in time.
	ErrUnavailable = errors.New("breached: the upstream range API is unavailable")
)

// MaxLines bounds an answer's lines (3 MiB): the full Pwned Passwords
// corpus's fullest range holds about 1,100 hashes; a corpus with a range
// of more is not random hashes, and its every answer would be that long.
const MaxLines = 1 << 16

// lineLen is the length of every line of an answer: 35 suffix digits, a
// colon, the count as 10 digits (leading zeros: a uint32 has at most 10)
// and CRLF.
const lineLen = hibp.SuffixLen + 1 + 10 + 2

// Config configures a Service. With a Corpus, every range is answered from
// it and Upstream is not called: the corpus is what the operator chose to
// hold, answering it sends no prefix to a third party and cannot fail on
// the network. Without either, Range answers ErrOff.
type Config struct {
	// Corpus answers every range when set. The default is nil.
	Corpus *Corpus
	// Upstream is the URL of a range API that the 5 upper-case prefix
	// digits are appended to, e.g. https://api.pwnedpasswords.com/range/,
	// asked when there is no Corpus. The default is "": no forwarding.
	Upstream string
	// UpstreamTimeout bounds one upstream request, from dial to the last
	// byte of its body. The default is 2s.
	UpstreamTimeout time.Duration
	// CacheEntries bounds how many upstream ranges are kept (the least
	// recently used goes first); a full HIBP range takes some 22 KB. The
	// default is 1024.
	CacheEntries int
	// CacheTTL is how long an upstream range is kept. The default is 1h.
	CacheTTL time.Duration
	// Lines is the number of lines of every answer; ranges that hold
	// fewer hashes are padded with lines of count 0. An upstream range of
	// more hashes is ErrUnavailable. The default is, with a Corpus, its
	// fullest range rounded up to a multiple of 256 (the full Pwned
	// Passwords corpus, about 1,100 in its fullest range, gives 1,280),
	// and 2,048 with an upstream.
	Lines int
	// Client makes the upstream requests. The default is an http.Client
	// with UpstreamTimeout as its Timeout.
	Client *http.Client
	// Metrics, when set, counts answers and upstream errors. The default is
	// nil.
	Metrics *Metrics
	// Now is the clock of the cache. The default is time.Now.
	Now func() time.Time
}

// Service answers ranges. It is safe for concurrent use.
type Service struct {
	corpus   *Corpus
	upstream string
	client   *http.Client
	lines    int
	metrics  *Metrics
	cache    *cache
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = 2 * time.Second
	}
	if cfg.CacheEntries <= 0 {
		cfg.CacheEntries = 1024
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.UpstreamTimeout}
	}
	if cfg.Upstream != "" && !strings.HasPrefix(cfg.Upstream, "https://") && !strings.HasPrefix(cfg.Upstream, "http://") {
		return nil, errors.New("breached: upstream must be an http:// or https:// URL")
	}
	s := &Service{upstream: cfg.Upstream, client: cfg.Client, metrics: cfg.Metrics, corpus: cfg.Corpus}
	if s.corpus != nil {
		s.upstream = ""
	}
	s.lines = cfg.Lines
	if s.lines <= 0 {
		s.lines = 2048
		if s.corpus != nil {
			s.lines = (s.corpus.MaxRange()/256 + 1) * 256
		}
	}
	if s.lines > MaxLines {
		return nil, fmt.Errorf("breached: an answer of %d lines is more than %d (a corpus of SHA-1 hashes never has a range that full)", s.lines, MaxLines)
	}
	if s.corpus != nil && s.corpus.MaxRange() > s.lines {
		return nil, fmt.Errorf("breached: lines is %d, but the corpus's fullest range holds %d hashes", s.lines, s.corpus.MaxRange())
	}
	if s.upstream != "" {
		s.cache = &cache{max: cfg.CacheEntries, ttl: cfg.CacheTTL, now: cfg.Now, m: map[uint32]*list.Element{}}
	}
	return s, nil
}

// Lines returns the number of lines of every answer.
func (s *Service) Lines() int { return s.lines }

// Len returns the byte length of every answer.
func (s *Service) Len() int { return s.lines * lineLen }

// Range returns the padded range answer for prefix: Lines lines of
// SUFFIX:COUNT (35 upper-case hex digits, a colon, 10 decimal digits),
// each ending in CRLF, the range's hashes first and then padding lines of
// random suffixes and count 0. Every answer has the same length whatever
// the prefix, and every call writes the same lines the same way: a random
// suffix is drawn for each of the Lines lines, and the range's hashes are
// copied over the first of them. A nil Service answers ErrOff.
func (s *Service) Range(ctx context.Context, prefix string) ([]byte, error) {
	if s == nil || s.corpus == nil && s.upstream == "" {
		return nil, ErrOff
	}
	if !hibp.ValidPrefix(prefix) {
		return nil, ErrBadPrefix
	}
	p64, _ := strconv.ParseUint(prefix, 16, 32)
	p := uint32(p64)
	var recs []byte
	if s.corpus != nil {
		recs = s.corpus.rangeOf(p)
		s.metrics.answered(sourceCorpus)
	} else {
		var err error
		if recs, err = s.fetch(ctx, p); err != nil {
			return nil, err
		}
	}
	return s.write(recs), nil
}

// write formats the answer of the packed records recs.
func (s *Service) write(recs []byte) []byte {
	out := make([]byte, s.lines*lineLen)
	var rec [recSize]byte
	for i := range s.lines {
		// Every line gets its random suffix, used or not, so that a full
		// range and an empty one cost the same.
		a, b, c := rand.Uint64(), rand.Uint64(), rand.Uint64()
		for j := range 8 {
			rec[j], rec[8+j] = byte(a>>(8*j)), byte(b>>(8*j))
		}
		rec[16], rec[17] = byte(c), byte(c>>8)
		rec[18], rec[19], rec[20], rec[21] = 0, 0, 0, 0
		r := rec[:]
		if o := i * recSize; o < len(recs) {
			r = recs[o : o+recSize]
		}
		putLine(out[i*lineLen:(i+1)*lineLen], r)
	}
	return out
}

const upperHex = "0123456789ABCDEF"

// putLine writes the record r as one line: the 35 digits after its first
// (the prefix's last), the count in 10 digits, CRLF.
func putLine(dst []byte, r []byte) {
	for i := range suffixLen {
		if i > 0 {
			dst[2*i-1] = upperHex[r[i]>>4]
		}
		dst[2*i] = upperHex[r[i]&0x0f]
	}
	dst[35] = ':'
	n := record(r).count()
	for i := 45; i >= 36; i-- {
		dst[i] = byte('0' + n%10)
		n /= 10
	}
	dst[46], dst[47] = '\r', '\n'
}

// fetch returns the packed records of range p from the cache or the
// upstream.
func (s *Service) fetch(ctx context.Context, p uint32) ([]byte, error) {
	if recs, ok := s.cache.get(p); ok {
		s.metrics.answered(sourceCache)
		return recs, nil
	}
	prefix := fmt.Sprintf("%05X", p)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.upstream+prefix, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Add-Padding", "true")
	req.Header.Set("User-Agent", "tollgate")
	resp, err := s.client.Do(req)
	if err != nil {
		s.metrics.upstreamError(errNetwork)
		// The error without its URL, which holds the prefix: an error may
		// be logged, a prefix never is.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.metrics.upstreamError(errStatus)
		return nil, fmt.Errorf("%w: status %d", ErrUnavailable, resp.StatusCode)
	}
	// A padded HIBP range is under 100 KB; a body much larger is not one.
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(s.lines)*64+1))
	if err != nil {
		s.metrics.upstreamError(errNetwork)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(body) > s.lines*64 {
		s.metrics.upstreamError(errTooLarge)
		return nil, fmt.Errorf("%w: the range is larger than %d lines allow", ErrUnavailable, s.lines)
	}
	recs, n := rangeRecords(p, body)
	if n > s.lines {
		s.metrics.upstreamError(errTooLarge)
		return nil, fmt.Errorf("%w: the range holds %d hashes, more than lines (%d)", ErrUnavailable, n, s.lines)
	}
	s.cache.put(p, recs)
	s.metrics.answered(sourceUpstream)
	return recs, nil
}

// rangeRecords packs the hashes of a range body with a count above 0, as
// the clients read it (hibp.Count): malformed lines and padding skipped.
func rangeRecords(p uint32, body []byte) ([]byte, int) {
	var recs []byte
	var hx [40]byte
	copy(hx[:], fmt.Sprintf("%05X", p))
	var h [20]byte
	n := 0
	for line := range strings.Lines(string(body)) {
		sfx, cnt, ok := strings.Cut(strings.Trim(line, " \r\n\t"), ":")
		sfx = strings.TrimSpace(sfx)
		if !ok || len(sfx) != hibp.SuffixLen {
			continue
		}
		c, ok := parseCount([]byte(strings.TrimSpace(cnt)))
		if !ok || c == 0 {
			continue
		}
		copy(hx[5:], sfx)
		if !decodeHex(h[:], hx[:]) {
			continue
		}
		recs = append(recs, h[2:]...)
		recs = append(recs, byte(c>>24), byte(c>>16), byte(c>>8), byte(c))
		n++
	}
	return recs, n
}

// cache holds upstream ranges, least recently used first out.
type cache struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	now func() time.Time
	m   map[uint32]*list.Element
	lru list.List // of *cached, most recent at the front
}

type cached struct {
	p       uint32
	recs    []byte
	expires time.Time
}

func (c *cache) get(p uint32) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[p]
	if !ok {
		return nil, false
	}
	v := e.Value.(*cached)
	if !c.now().Before(v.expires) {
		c.lru.Remove(e)
		delete(c.m, p)
		return nil, false
	}
	c.lru.MoveToFront(e)
	return v.recs, true
}

func (c *cache) put(p uint32, recs []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := &cached{p: p, recs: recs, expires: c.now().Add(c.ttl)}
	if e, ok := c.m[p]; ok {
		e.Value = v
		c.lru.MoveToFront(e)
		return
	}
	for c.lru.Len() >= c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.m, old.Value.(*cached).p)
	}
	c.m[p] = c.lru.PushFront(v)
}

// len returns how many ranges are cached.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Live is the Service in use, swapped on a reload; its zero value answers
// ErrOff. It is safe for concurrent use.
type Live struct {
	p atomic.Pointer[Service]
}

// Set makes s the Service that answers; nil turns answers off.
func (l *Live) Set(s *Service) { l.p.Store(s) }

// Range answers as the current Service's Range.
func (l *Live) Range(ctx context.Context, prefix string) ([]byte, error) {
	return l.p.Load().Range(ctx, prefix)
}
