package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
)

// On a Cluster a batch's ops are grouped by their keys' slots, and a group
// of more than one op is one call of check.lua with no gates (nothing
// blocks, nothing is undone: a batch, as one node runs one), the others
// each their op script's EVALSHA; every call goes in one pipeline, which
// go-redis splits per master, or under load in the shared round trips of
// each master (shared.go). It is on with subject hash tags
// (Config.SubjectTags), where every key of a subject is in the subject's
// slot: a fresh login check (account, address, fingerprint) is 3 calls
// where it was 9. With today's names a check's keys share a slot only by
// chance, so a Cluster sends each op on its own as before: a group of
// chance would make a shape of its own (shape.go), and a flood of them
// would fill the shapes' cap. What a check decides stays authguard.Reserve's (or the hints'
// peeks, hints.go): the groups only carry its batches, so its verdicts are
// the pipeline's, and a refused check's undo is a second grouped batch.

// clusterSlots is how many slots a Redis Cluster hashes keys into.
const clusterSlots = 16384

// keySlot returns the Cluster slot of key: CRC16 (XMODEM) of its hash tag,
// the part between its first '{' and the first '}' after it when that is
// not empty, else of the whole key (the Redis Cluster specification).
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^key[k]]
	}
	return int(crc) % clusterSlots
}

// crc16Table is CRC16-CCITT (XMODEM, polynomial 0x1021), a byte at a time.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// slotCall is one call of a grouped batch: a check script's over the ops
// at idx (one slot), or an op script's for one op.
type slotCall struct {
	idx    []int
	script *redis.Script
	source string // the script's source when this call made it: sent with EVAL, which loads it
	keys   []string
	args   []any
	check  bool // a check script's call: its answer is checkResults'
}

// doSlots is do on a Cluster: ops grouped by slot (above), one round trip
// per master.
// Each op's error is its call's (opErrors), so blame counts a group's
// failure against its master as it counted each op's.
func (s *Store) doSlots(ctx context.Context, ops []authguard.Op, now, expire string) ([]authguard.Result, error) {
	var (
		slots  = make([]int, 0, 4)   // each group's slot
		groups = make([][]int, 0, 4) // op indexes, by group
	)
	for i, op := range ops {
		slot := keySlot(op.StoreKey())
		j := -1
		for k, sl := range slots {
			if sl == slot {
				j = k
				break
			}
		}
		if j < 0 {
			j = len(slots)
			slots, groups = append(slots, slot), append(groups, nil)
		}
		groups[j] = append(groups[j], i)
	}
	calls := make([]slotCall, 0, len(ops))
	for _, g := range groups {
		sub := make([]authguard.Op, len(g))
		for k, i := range g {
			sub[k] = ops[i]
		}
		if len(g) > 1 && scripted(sub) {
			c, err := s.checkCall(sub, make([]authguard.Gate, len(sub)), false, false, now, expire)
			if err != nil {
				return nil, err
			}
			sc := slotCall{idx: g, script: c.script.Script, keys: c.keys, args: c.args, check: true}
			if c.made {
				sc.source = c.script.source
			}
			calls = append(calls, sc)
			continue
		}
		for _, i := range g {
			c, err := encode(ops[i], now, expire)
			if err != nil {
				return nil, err
			}
			calls = append(calls, slotCall{idx: []int{i}, script: c.script, keys: []string{c.key}, args: c.args})
		}
	}

	// One round trip per master: the batch's own pipeline, or under load
	// the next shared write of each master's connection (shared.go). The
	// rarer calls below (a script missing, a slot migrating) go in
	// pipelines of their own.
	cmds := make([]*redis.Cmd, len(calls))
	for k, c := range calls {
		if c.source != "" {
			cmds[k] = evalCmd(ctx, "eval", c.source, c.keys, c.args)
		} else {
			cmds[k] = evalCmd(ctx, "evalsha", c.script.Hash(), c.keys, c.args)
		}
	}
	s.exec(ctx, cmds)
	// Scripts missing on a master (restart, failover, a shape another
	// master loaded): those calls again with EVAL.
	s.resend(ctx, cmds, noScript, func(pipe redis.Pipeliner, k int) *redis.Cmd {
		return calls[k].script.Eval(ctx, pipe, calls[k].keys, calls[k].args...)
	})
	// An ACL that refuses EVAL (NOPERM): the scripts loaded on every
	// master with SCRIPT LOAD, then called by hash.
	s.resend(ctx, cmds, func(k int, err error) bool {
		return redis.HasErrorPrefix(err, "NOPERM") && calls[k].script.Load(ctx, s.client).Err() == nil
	}, func(pipe redis.Pipeliner, k int) *redis.Cmd {
		return calls[k].script.EvalSha(ctx, pipe, calls[k].keys, calls[k].args...)
	})
	// A slot being migrated to another master: a call of several keys,
	// some moved already and some not, is refused with TRYAGAIN before it
	// runs (ASK redirects only a call whose keys have all moved), and one
	// whose keys are on neither side yet can bounce between them (ASK, the
	// target's TRYAGAIN, MOVED back) until go-redis gives up on an ASK or
	// MOVED. Refused, it ran nowhere: those groups go again as one call
	// per op, each following its own redirect.
	var split []slotCall
	for k, c := range calls {
		if err := cmds[k].Err(); !c.check || !(redis.HasErrorPrefix(err, "TRYAGAIN") || redis.HasErrorPrefix(err, "ASK") || redis.HasErrorPrefix(err, "MOVED")) {
			continue
		}
		for _, i := range c.idx {
			oc, err := encode(ops[i], now, expire)
			if err != nil {
				return nil, err
			}
			split = append(split, slotCall{idx: []int{i}, script: oc.script, keys: []string{oc.key}, args: oc.args})
		}
		calls[k].idx = nil // answered by the calls in split
	}
	if len(split) > 0 {
		more := make([]*redis.Cmd, len(split))
		pipe := s.client.Pipeline()
		for k, c := range split {
			more[k] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx)
		s.resend(ctx, more, noScript, func(pipe redis.Pipeliner, k int) *redis.Cmd {
			return split[k].script.Eval(ctx, pipe, split[k].keys, split[k].args...)
		})
		calls, cmds = append(calls, split...), append(cmds, more...)
	}

	res := make([]authguard.Result, len(ops))
	var errs []error
	fail := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(ops))
		}
		errs[i] = err
	}
	for k, c := range calls {
		if len(c.idx) == 0 {
			continue
		}
		if c.check {
			sub := make([]authguard.Op, len(c.idx))
			for j, i := range c.idx {
				sub[j] = ops[i]
			}
			got, _, err := checkResults(cmds[k], sub, make([]authguard.Gate, len(sub)), false)
			for j, i := range c.idx {
				if err != nil {
					// checkResults marks a full Redis ErrStoreFull
					fail(i, fmt.Errorf("op %d on %s: %w", i, ops[i].StoreKey(), err))
					continue
				}
				res[i] = got[j]
			}
			continue
		}
		i := c.idx[0]
		r, err := decode(cmds[k])
		switch {
		case redis.HasErrorPrefix(err, "OOM"):
			fail(i, fmt.Errorf("op %d on %s: %w: %w", i, c.keys[0], authguard.ErrStoreFull, err))
		case err != nil:
			fail(i, fmt.Errorf("op %d on %s: %w", i, c.keys[0], err))
		default:
			res[i] = r
		}
	}
	if errs != nil {
		return nil, &opErrors{errs}
	}
	return res, nil
}
