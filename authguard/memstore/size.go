package memstore

import (
	"unsafe"

	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/limits"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// entryBytes is what a key costs the store beside its key and state: its
// slot and its shares of the slots slice's spare capacity and of the
// shard's index. A shard keeps both at their high-water mark (a Go map
// never shrinks, and a free slot is reused rather than given back), so it
// charges entryBytes for every slot it has made, in use or free.
//
//   - the slot: unsafe.Sizeof(slot{}), 64 bytes on 64-bit platforms;
//   - the slots slice's spare capacity: append grows a large slice by a
//     quarter and a small one twofold, 5 to 44 bytes a key measured (13 at
//     the default size), counted as 16;
//   - the index, a map[uint64]int32: a Swiss table keeps 8 slots of 16
//     bytes (the hash, an int32, padding) behind 8 control bytes, in tables
//     of at most 1,024 slots that grow or split when 7/8 full, so from 7/16
//     to 7/8 full: 19 to 39 bytes a key, with the allocator's rounding,
//     counted as 40. (A key whose hash clashes with another's is kept in a
//     map by its string instead, about once in 10¹³ stores of a million
//     keys: not counted.)
//
// TestSize_EstimateMatchesHeap keeps the sum honest.
const entryBytes = int64(unsafe.Sizeof(slot{})) + 16 + 40

// size estimates the heap that storing state under key holds, in bytes:
// entryBytes, the key's bytes and the state's heap. Each heap object counts
// as the allocator rounds it, to its size class (alloc). The states are
// those authguard.Apply returns, each boxed in an interface: the box is one
// more object.
//
//   - backoff.State: the box (the struct, 80 bytes); the Seen slice's array
//     (a fingerprint's string header and time, 24 bytes each, at most
//     backoff.MaxSeen) and each fingerprint's bytes; the Pending slice's
//     array (a string header each, at most backoff.MaxPending) and each
//     attempt's bytes.
//   - spraydetect.Log: the box (a slice header); the Entries array (a
//     member's string header and time, 24 bytes each, at most the windows'
//     Cap) and each member's bytes.
//   - []int64 (a limits.SlidingLog): the box and the array, 8 bytes a unit.
//   - int64 (a bucket's TAT or drain time): the box, 8 bytes.
//   - limits.FixedState, limits.CounterState, limits.ConversionState: the
//     box, the struct.
//
// Strings shared between states count in each: an engine's check records
// the same account hash in its /64, /56 and /48 spray logs, and the same
// attempt ID in every counter it charges. size then overestimates, on the
// side of evicting early. A state of another type counts as unknownState.
// The estimate reads only lengths and capacities: it is O(members).
func size(key string, state any) int64 {
	n := entryBytes + alloc(len(key), false)
	switch s := state.(type) {
	case backoff.State:
		n += alloc(int(unsafe.Sizeof(s)), true)
		n += alloc(cap(s.Seen)*int(unsafe.Sizeof(backoff.Seen{})), true)
		for _, f := range s.Seen {
			n += alloc(len(f.Fingerprint), false)
		}
		n += alloc(cap(s.Pending)*int(unsafe.Sizeof("")), true)
		for _, a := range s.Pending {
			n += alloc(len(a), false)
		}
	case spraydetect.Log:
		n += alloc(int(unsafe.Sizeof(s)), true)
		n += alloc(cap(s.Entries)*int(unsafe.Sizeof(spraydetect.Entry{})), true)
		for _, e := range s.Entries {
			n += alloc(len(e.Member), false)
		}
	case []int64:
		n += alloc(int(unsafe.Sizeof(s)), true) + alloc(cap(s)*8, false)
	case int64:
		n += alloc(8, false)
	case limits.FixedState:
		n += alloc(int(unsafe.Sizeof(s)), false)
	case limits.CounterState:
		n += alloc(int(unsafe.Sizeof(s)), false)
	case limits.ConversionState:
		n += alloc(int(unsafe.Sizeof(s)), false)
	case nil:
	default:
		n += unknownState
	}
	return n
}

// resize is size(key, next) for a key whose state was prev, of size
// prevBytes: a log that an op left as it was (an admission refused, a
// peek) keeps its entries, and prevBytes then stands, instead of a pass
// over its members on every refused check of a log at its limit. Apply
// never changes a state in place, so the same entries, length and
// capacity are the same log.
func resize(key string, next, prev any, prevBytes int64) int64 {
	if a, ok := next.(spraydetect.Log); ok {
		if b, ok := prev.(spraydetect.Log); ok && len(a.Entries) == len(b.Entries) &&
			cap(a.Entries) == cap(b.Entries) && unsafe.SliceData(a.Entries) == unsafe.SliceData(b.Entries) {
			return prevBytes
		}
	}
	return size(key, next)
}

// unknownState is what size charges for a state of a type it does not
// know: more than any fixed-size state above.
const unknownState = 128

// alloc is the heap an allocation of n bytes takes: n rounded up to the Go
// allocator's size class (sizeClasses); above the largest class, to whole
// 8 KiB pages. An object that holds pointers and is larger than 512 bytes
// carries an 8-byte header inside its allocation. Objects under 16 bytes
// without pointers share 16-byte blocks (the tiny allocator): they count
// as n rounded up to 8.
func alloc(n int, pointers bool) int64 {
	switch {
	case n <= 0:
		return 0
	case n < 16 && !pointers:
		return int64(n+7) &^ 7
	}
	if pointers && n > 512 {
		n += 8
	}
	switch {
	case n <= smallMax:
		return int64(smallClass[(n+7)>>3])
	case n > maxSmallSize:
		return int64(n+pageSize-1) &^ (pageSize - 1)
	}
	lo, hi := 0, len(sizeClasses)-1 // the first class holding n
	for lo < hi {
		mid := (lo + hi) / 2
		if int(sizeClasses[mid]) < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int64(sizeClasses[lo])
}

// smallClass[(n+7)/8] is the size class of n bytes up to smallMax: most of
// what size rounds is a string of a few dozen bytes.
var smallClass = func() (t [smallMax/8 + 1]uint16) {
	c := 0
	for i := range t {
		for int(sizeClasses[c]) < 8*i {
			c++
		}
		t[i] = sizeClasses[c]
	}
	return t
}()

const (
	smallMax     = 1024
	maxSmallSize = 32768
	pageSize     = 8192
)

// sizeClasses are the Go runtime's object sizes, as of Go 1.26
// (internal/runtime/gc.SizeClassToSize); TestSize_ClassesAreTheRuntimes
// checks them against the runtime's own, read from runtime/metrics.
var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}
