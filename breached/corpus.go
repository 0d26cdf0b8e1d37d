package breached

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
)

// The in-memory layout of a corpus. Every hash is one record of recSize
// bytes: the 18 bytes of the SHA-1 from its third on (the low nibble of the
// third byte is the suffix's first digit; its high nibble, the prefix's
// last, is kept as it is rather than shifting every record by four bits),
// then the count as a big-endian uint32. The first 20 bits, the range
// prefix, are not stored: a record's place says them. Records are sorted
// within their range, and offsets[p] is the index of range p's first
// record (offsets[p+1] the end), so a range is one slice.
//
// A hash costs recSize = 22 bytes, plus 4 MiB for the offset table whatever
// the count. Suffixes are kept whole: a range answer carries all 35 digits,
// which the caller compares, so nothing is truncated and there are no false
// positives.
const (
	ranges    = 1 << 20
	suffixLen = 18
	recSize   = suffixLen + 4
	tableSize = (ranges + 1) * 4
)

// ErrTooLarge is wrapped by the error of a corpus that would take more
// than its MaxBytes in memory. It is found before the corpus is held.
var ErrTooLarge = errors.New("breached: the corpus is larger than max_bytes")

// Corpus is an in-memory index of breached-password SHA-1 hashes and their
// counts, by range. It is immutable once loaded and safe for concurrent
// use.
type Corpus struct {
	offsets  []uint32 // ranges+1 entries
	recs     []byte   // recSize bytes a hash
	maxRange int      // the most hashes in one range
}

// Hashes returns how many distinct hashes the corpus holds.
func (c *Corpus) Hashes() int64 { return int64(len(c.recs) / recSize) }

// Bytes returns the memory the index takes: the records and the offset
// table.
func (c *Corpus) Bytes() int64 { return int64(cap(c.recs)) + tableSize }

// MaxRange returns the most hashes of one range.
func (c *Corpus) MaxRange() int { return c.maxRange }

// Count returns the count of the SHA-1 hash h, 0 when the corpus does not
// hold it.
func (c *Corpus) Count(h [20]byte) uint32 {
	p := prefixOf(h[:])
	lo, hi := int(c.offsets[p]), int(c.offsets[p+1])
	i := lo + sort.Search(hi-lo, func(i int) bool {
		return bytes.Compare(c.recs[(lo+i)*recSize:][:suffixLen], h[2:]) >= 0
	})
	if i == hi {
		return 0
	}
	r := record(c.recs[i*recSize : (i+1)*recSize])
	if !bytes.Equal(r[:suffixLen], h[2:]) {
		return 0
	}
	return r.count()
}

// record is one hash's stored bytes.
type record []byte

func (r record) count() uint32 {
	return uint32(r[18])<<24 | uint32(r[19])<<16 | uint32(r[20])<<8 | uint32(r[21])
}

// rangeOf returns the packed records of range p, recSize bytes each, in
// suffix order.
func (c *Corpus) rangeOf(p uint32) []byte {
	return c.recs[int(c.offsets[p])*recSize : int(c.offsets[p+1])*recSize]
}

func prefixOf(h []byte) uint32 { return uint32(h[0])<<12 | uint32(h[1])<<4 | uint32(h[2])>>4 }

// Load reads a corpus at path: a directory of range files (what the Pwned
// Passwords downloader writes with one file per range: files named by the
// 5-hex-digit prefix, with or without an extension such as .txt, each of
// SUFFIX:COUNT lines), or one file of SHA1:COUNT lines (full 40-digit
// hashes, sorted or not). Digits are either case, lines end in LF or CRLF,
// counts may have leading zeros; a count of 0 (padding) and a blank line
// are skipped, a count past 2^32-1 is held as 2^32-1, and a hash given
// twice is held once with the counts added. Anything else on a line is an
// error naming the file and line. In a directory, files whose names are not
// a prefix are ignored.
//
// The file or files are read twice: once to count the hashes of each range,
// so that a corpus past maxBytes is refused before anything is held (an
// error wrapping ErrTooLarge), and once to fill an index of exactly that
// size. A file that changes between the passes is an error. maxBytes <= 0
// is no bound.
func Load(path string, maxBytes int64) (*Corpus, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("breached: corpus: %w", err)
	}
	var src source
	if fi.IsDir() {
		src, err = dirSource(path)
		if err != nil {
			return nil, err
		}
	} else {
		src = func(f func(h []byte, n uint32) error) error {
			fh, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("breached: corpus: %w", err)
			}
			defer fh.Close()
			return readLines(fh, filepath.Base(path), -1, f)
		}
	}
	return build(src, maxBytes)
}

// Parse reads a corpus of SHA1:COUNT lines from data, as Load reads one
// file.
func Parse(data []byte, maxBytes int64) (*Corpus, error) {
	return build(func(f func(h []byte, n uint32) error) error {
		return readLines(bytes.NewReader(data), "corpus", -1, f)
	}, maxBytes)
}

// parseRange reads one range file of SUFFIX:COUNT lines for prefix p, as
// Load reads a directory's file.
func parseRange(p uint32, data []byte, maxBytes int64) (*Corpus, error) {
	return build(func(f func(h []byte, n uint32) error) error {
		return readLines(bytes.NewReader(data), "range", int64(p), f)
	}, maxBytes)
}

// source calls f with every hash (20 bytes, valid only during the call)
// and count of a corpus, in any order, each time it is called.
type source func(f func(h []byte, n uint32) error) error

func dirSource(dir string) (source, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("breached: corpus: %w", err)
	}
	type file struct {
		name   string
		prefix uint32
	}
	var files []file
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || len(name) < 5 || (len(name) > 5 && name[5] != '.') {
			continue
		}
		p, err := strconv.ParseUint(name[:5], 16, 32)
		if err != nil {
			continue
		}
		files = append(files, file{name, uint32(p)})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("breached: corpus: %s holds no range file (named by a 5-hex-digit prefix)", dir)
	}
	return func(f func(h []byte, n uint32) error) error {
		for _, fl := range files {
			fh, err := os.Open(filepath.Join(dir, fl.name))
			if err != nil {
				return fmt.Errorf("breached: corpus: %w", err)
			}
			err = readLines(fh, fl.name, int64(fl.prefix), f)
			fh.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// readLines reads SHA1:COUNT lines from r (prefix < 0) or SUFFIX:COUNT
// lines of range prefix (prefix >= 0), calling f with each hash whose count
// is not 0. name names r in errors; no line's text is repeated in one.
func readLines(r io.Reader, name string, prefix int64, f func(h []byte, n uint32) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var h [20]byte
	digits := 40
	if prefix >= 0 {
		digits = 35
	}
	var hexbuf [40]byte
	if prefix >= 0 {
		copy(hexbuf[:], fmt.Sprintf("%05X", prefix))
	}
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("breached: corpus: %s line %d: longer than 64 KiB", name, line)
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("breached: corpus: %s: %w", name, err)
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			hx, cnt, ok := bytes.Cut(t, []byte{':'})
			if !ok || len(hx) != digits {
				return fmt.Errorf("breached: corpus: %s line %d: not %d hex digits, a colon and a count", name, line, digits)
			}
			n, ok := parseCount(cnt)
			if !ok {
				return fmt.Errorf("breached: corpus: %s line %d: the count is not a decimal number", name, line)
			}
			full := append(hexbuf[:40-digits], hx...)
			if !decodeHex(h[:], full) {
				return fmt.Errorf("breached: corpus: %s line %d: not %d hex digits, a colon and a count", name, line, digits)
			}
			if n > 0 {
				if err := f(h[:], n); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// parseCount reads decimal digits (leading zeros allowed), holding a count
// past the largest uint32 as the largest.
func parseCount(b []byte) (uint32, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = min(n*10+uint64(c-'0'), math.MaxUint32)
	}
	return uint32(n), true
}

func decodeHex(dst, src []byte) bool {
	var bad byte
	for i := range dst {
		hi, lo := hexVal[src[2*i]], hexVal[src[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo&0x0f
	}
	return bad&0xf0 == 0
}

// hexVal is each byte's value as a hex digit, 0xff for a byte that is not
// one: a table, as the corpus's 40 digits a line are most of a load.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range 10 {
		t['0'+i] = byte(i)
	}
	for i := range 6 {
		t['a'+i], t['A'+i] = byte(10+i), byte(10+i)
	}
	return t
}()

// build indexes src in two passes: count each range's hashes and check the
// size, then fill, sort each range and merge its duplicates.
func build(src source, maxBytes int64) (*Corpus, error) {
	counts := make([]uint32, ranges+1)
	var total int64
	err := src(func(h []byte, _ uint32) error {
		p := prefixOf(h)
		if counts[p] == math.MaxUint32 || total == math.MaxUint32 {
			return fmt.Errorf("%w: more than 2^32-1 hashes", ErrTooLarge)
		}
		counts[p]++
		total++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if need := total*recSize + tableSize; maxBytes > 0 && need > maxBytes {
		return nil, fmt.Errorf("%w: %d hashes take %d bytes, max_bytes is %d", ErrTooLarge, total, need, maxBytes)
	}
	c := &Corpus{offsets: make([]uint32, ranges+1), recs: make([]byte, total*recSize)}
	var o uint32
	for p := range ranges {
		c.offsets[p] = o
		o += counts[p]
	}
	c.offsets[ranges] = o
	next := counts[:ranges] // reused: the next free record of each range
	copy(next, c.offsets[:ranges])
	changed := fmt.Errorf("breached: corpus: a file changed while it was read")
	err = src(func(h []byte, n uint32) error {
		p := prefixOf(h)
		i := next[p]
		if i >= c.offsets[p+1] {
			return changed
		}
		next[p]++
		r := c.recs[int(i)*recSize : int(i+1)*recSize]
		copy(r, h[2:])
		r[18], r[19], r[20], r[21] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !slices.Equal(next, c.offsets[1:]) {
		return nil, changed
	}
	c.compact()
	return c, nil
}

// compact sorts each range, merges a hash given twice into one record (the
// counts added) and closes the gaps, in place.
func (c *Corpus) compact() {
	var w uint32
	for p := range uint32(ranges) {
		lo, hi := c.offsets[p], c.offsets[p+1]
		c.offsets[p] = w
		rs := c.recs[int(lo)*recSize : int(hi)*recSize]
		sortRecords(rs)
		start := w
		for i := 0; i < len(rs); i += recSize {
			r := rs[i : i+recSize]
			if w > start {
				prev := c.recs[int(w-1)*recSize : int(w)*recSize]
				if bytes.Equal(prev[:suffixLen], r[:suffixLen]) {
					n := min(uint64(record(prev).count())+uint64(record(r).count()), math.MaxUint32)
					prev[18], prev[19], prev[20], prev[21] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
					continue
				}
			}
			copy(c.recs[int(w)*recSize:], r)
			w++
		}
		c.maxRange = max(c.maxRange, int(w-start))
	}
	c.offsets[ranges] = w
	c.recs = c.recs[: int(w)*recSize : int(w)*recSize]
}

// sortRecords sorts packed records by suffix. A range holds about a
// thousand in the full corpus: sorting an index and permuting is not worth
// it, a copy is.
func sortRecords(rs []byte) {
	n := len(rs) / recSize
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = bytes.Compare(rs[(i-1)*recSize:][:suffixLen], rs[i*recSize:][:suffixLen]) <= 0
	}
	if sorted {
		return
	}
	recs := make([][recSize]byte, n)
	for i := range recs {
		copy(recs[i][:], rs[i*recSize:])
	}
	slices.SortFunc(recs, func(a, b [recSize]byte) int { return bytes.Compare(a[:suffixLen], b[:suffixLen]) })
	for i := range recs {
		copy(rs[i*recSize:], recs[i][:])
	}
}
