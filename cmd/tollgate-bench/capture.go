package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// captureScript returns redis-benchmark's arguments for the table's script
// row: the EVALSHA a fresh check of tollgate on Redis (url) sends, as
// Redis's MONITOR shows it, with __rand_int__ at the start of each key's
// last segment, so that every call makes its keys fresh as the check's
// are. The server's script is already in Redis's script cache (its first
// call loaded it), and stays there through the rounds' FLUSHDB.
func (t *table) captureScript(ctx context.Context, url string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", t.redis.Addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	r := bufio.NewReaderSize(conn, 1<<16)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		return nil, err
	}
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "+OK" {
		return nil, fmt.Errorf("MONITOR: %q, %v", line, err)
	}
	w := newBenchWorker(t.b, subjectsRandom)
	sent := make(chan error, 1)
	go func() {
		// A check the server has sent before goes as EVALSHA; the first of
		// a shape goes as EVAL with its source: send a second check then.
		for range 2 {
			w.newSubject()
			if _, _, err := w.post(ctx, url+"/v1/check", w.checkBody()); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if serr := <-sent; serr != nil {
				return nil, fmt.Errorf("a check to %s: %w", url, serr)
			}
			return nil, fmt.Errorf("no EVALSHA of a check seen by MONITOR: %w", err)
		}
		args, ok := monitorArgs(strings.TrimRight(line, "\r\n"))
		if !ok || len(args) < 3 || !strings.EqualFold(args[0], "evalsha") || !slices.ContainsFunc(args, isAccountKey) {
			continue // not the check's script: its inner commands, or the server's own calls
		}
		bench, err := freshKeys(args[1:])
		if err != nil {
			return nil, err
		}
		return bench, nil
	}
}

// isAccountKey reports whether s is a login account's key, which every
// check of the table's load has.
func isAccountKey(s string) bool { return strings.Contains(s, ":login:acct:") }

// freshKeys makes EVALSHA's arguments (sha, numkeys, keys, then the
// script's arguments) redis-benchmark's: __rand_int__ at the start of each
// key's last segment (after its last ':').
func freshKeys(args []string) ([]string, error) {
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 || 2+n > len(args) {
		return nil, fmt.Errorf("EVALSHA with %q keys of %d arguments", args[1], len(args))
	}
	out := append([]string(nil), args...)
	for i := 2; i < 2+n; i++ {
		k := out[i]
		at := strings.LastIndexByte(k, ':') + 1
		out[i] = k[:at] + "__rand_int__" + k[at:]
	}
	return out, nil
}

// monitorArgs reads the command in one line of Redis's MONITOR: a time, the
// client in brackets, then each argument in double quotes, escaped as
// Redis's sdscatrepr writes it (\\ \" \n \r \t \a \b and \xHH). ok is false
// for a line that is not one.
func monitorArgs(line string) (args []string, ok bool) {
	end := strings.Index(line, "] ")
	if end < 0 {
		return nil, false
	}
	s := line[end+2:]
	for len(s) > 0 {
		if s[0] != '"' {
			return nil, false
		}
		arg, rest, err := unquoteRepr(s[1:])
		if err != nil {
			return nil, false
		}
		args = append(args, arg)
		s = rest
		if len(s) > 0 {
			if s[0] != ' ' || len(s) == 1 {
				return nil, false // no space between two, or one after the last
			}
			s = s[1:]
		}
	}
	return args, len(args) > 0
}

// unquoteRepr reads one sdscatrepr argument from s, just after its opening
// quote: the argument and what follows its closing quote.
func unquoteRepr(s string) (arg, rest string, err error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 >= len(s) {
				return "", "", errors.New("a backslash at the end")
			}
			i++
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if i+2 >= len(s) {
					return "", "", errors.New("a short \\x escape")
				}
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err != nil {
					return "", "", fmt.Errorf("\\x escape: %w", err)
				}
				b.WriteByte(byte(v))
				i += 2
			default:
				return "", "", fmt.Errorf("an unknown escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("no closing quote")
}
