package breached

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The benchmarks run on a corpus of random hashes written as the Pwned
// Passwords downloader writes its single file (sorted SHA1:COUNT lines,
// CRLF), or with TOLLGATE_BREACHED_FORMAT=dir its directory of 1,048,576
// range files, TOLLGATE_BREACHED_HASHES of them: 100,000 by default so
// that make bench stays quick. The figures in BENCHMARKS.md are of 10
// million:
//
//	TOLLGATE_BREACHED_HASHES=10000000 go test -run '^$' -bench . -benchtime 1x ./breached/  # load
//	TOLLGATE_BREACHED_HASHES=10000000 go test -run '^$' -bench Range ./breached/          # answers
func benchHashes(b *testing.B) int {
	n := 100_000
	if s := os.Getenv("TOLLGATE_BREACHED_HASHES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("TOLLGATE_BREACHED_HASHES=%q is not a count", s)
		}
		n = v
	}
	return n
}

var benchFile struct {
	once sync.Once
	dir  string
	path string
	n    int
}

// benchCorpusFile writes (once per process) n random hashes, sorted, in
// the downloader's single-file format into a temporary directory.
func benchCorpusFile(b *testing.B) string {
	n := benchHashes(b)
	benchFile.once.Do(func() {
		dir, err := os.MkdirTemp("", "tollgate-breached-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchFile.dir, benchFile.n = dir, n
		benchFile.path = filepath.Join(dir, "pwnedpasswords.txt")
		rng := rand.New(rand.NewPCG(1, 2))
		hs := make([][20]byte, n)
		for i := range hs {
			for j := 0; j < 20; j += 8 {
				v := rng.Uint64()
				for k := 0; k < 8 && j+k < 20; k++ {
					hs[i][j+k] = byte(v >> (8 * k))
				}
			}
		}
		slices.SortFunc(hs, func(a, b [20]byte) int { return bytes.Compare(a[:], b[:]) })
		if os.Getenv("TOLLGATE_BREACHED_FORMAT") == "dir" {
			benchFile.path = filepath.Join(dir, "ranges")
			writeRangeFiles(b, benchFile.path, hs, rng)
			return
		}
		f, err := os.Create(benchFile.path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for _, h := range hs {
			fmt.Fprintf(w, "%X:%d\r\n", h, 1+rng.IntN(10_000))
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	})
	if benchFile.n != n {
		b.Fatalf("the corpus file holds %d hashes, not %d", benchFile.n, n)
	}
	return benchFile.path
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() && os.Getenv("GOGC") == "" {
		// Collecting a quarter as often, as internal/testkit/lessgc does,
		// spends a seventh less CPU on -short's parses and lookups (0.35 ->
		// 0.30 CPU-s, 65 MB resident rather than 37). Only under -short:
		// the benchmarks report heap-bytes.
		debug.SetGCPercent(400)
	}
	code := m.Run()
	if benchFile.dir != "" {
		os.RemoveAll(benchFile.dir)
	}
	os.Exit(code)
}

// writeRangeFiles writes the sorted hashes hs as the downloader's
// directory of range files: one file a prefix (every prefix, as the
// downloader writes), SUFFIX:COUNT lines.
func writeRangeFiles(b *testing.B, dir string, hs [][20]byte, rng *rand.Rand) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	i := 0
	for p := range uint32(ranges) {
		buf.Reset()
		for ; i < len(hs) && prefixOf(hs[i][:]) == p; i++ {
			fmt.Fprintf(&buf, "%X:%d\r\n", hs[i], 1+rng.IntN(10_000))
		}
		line := buf.Bytes()
		// Each line as written holds the whole hash: drop the prefix.
		out := make([]byte, 0, len(line))
		for len(line) > 0 {
			var l []byte
			l, line, _ = bytes.Cut(line, []byte("\n"))
			out = append(out, l[5:]...)
			out = append(out, '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05X.txt", p)), out, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad reads and indexes the corpus file: ns/op is the load time;
// index-bytes the index, heap-bytes the heap it holds after a GC (the
// index and what the load left behind), both per corpus.
func BenchmarkLoad(b *testing.B) {
	path := benchCorpusFile(b)
	fi, _ := os.Stat(path)
	b.SetBytes(fi.Size())
	var c *Corpus
	for b.Loop() {
		c = nil
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var err error
		c, err = Load(path, 0)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-bytes")
	}
	b.ReportMetric(float64(c.Bytes()), "index-bytes")
	b.ReportMetric(float64(c.Bytes())/float64(c.Hashes()), "bytes/hash")
	b.ReportMetric(float64(c.MaxRange()), "fullest-range")
}

var benchCorpus struct {
	once sync.Once
	c    *Corpus
	took time.Duration
}

// BenchmarkRange answers ranges of random prefixes from the loaded corpus:
// ns/op is one answer (lines of 48 bytes, the fullest range rounded up to
// 256).
func BenchmarkRange(b *testing.B) {
	path := benchCorpusFile(b)
	benchCorpus.once.Do(func() {
		start := time.Now()
		c, err := Load(path, 0)
		if err != nil {
			b.Fatal(err)
		}
		benchCorpus.c, benchCorpus.took = c, time.Since(start)
	})
	// Auto: the fullest range rounded up; 1,280: what the full corpus's
	// fullest range (about 1,100) rounds up to.
	for _, lines := range []int{0, 1280} {
		s, err := New(Config{Corpus: benchCorpus.c, Lines: lines})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("lines=%d", s.Lines()), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(s.Len()))
			ctx := context.Background()
			prefixes := make([]string, 1024)
			for i := range prefixes {
				prefixes[i] = fmt.Sprintf("%05X", rand.IntN(ranges))
			}
			i := 0
			for b.Loop() {
				if _, err := s.Range(ctx, prefixes[i%len(prefixes)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
