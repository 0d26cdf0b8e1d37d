package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The Debian package's paths.
const (
	dokuwikiRoot = "/usr/share/dokuwiki"
	dokuwikiConf = "/etc/dokuwiki"
	dokuwikiData = "/var/lib/dokuwiki/data"
)

// dokuwiki is a private DokuWiki instance: Debian's code, a configuration
// and data directory of its own, served by PHP's built-in server.
type dokuwiki struct {
	*proc
	base string
}

// startDokuWiki makes the instance's conf/ (Debian's, with plain-file
// authentication and alice in the admin group) and data/ (a copy of
// Debian's) in dir, and serves /usr/share/dokuwiki with php -S. A file
// PHP prepends to every script defines DOKU_CONF, which DokuWiki's
// init.php then keeps; without a router script, the server logs each
// request's status (count reads it).
func startDokuWiki(w *world, dir string) (*dokuwiki, error) {
	conf, data := filepath.Join(dir, "conf"), filepath.Join(dir, "data")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dokuwikiConf)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "users.auth.php" || e.Name() == "local.php" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dokuwikiConf, e.Name())) // acl.auth.php is a symlink
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(conf, e.Name()), b, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.CopyFS(data, os.DirFS(dokuwikiData)); err != nil {
		return nil, err
	}
	local := fmt.Sprintf("<?php\n$conf['useacl'] = 1;\n$conf['authtype'] = 'authplain';\n$conf['superuser'] = '@admin';\n$conf['savedir'] = '%s';\n", data)
	hash, err := runCmd(dir, []string{"E2E_PASSWORD=" + alicePassword}, time.Minute,
		"php", "-r", `echo password_hash(getenv("E2E_PASSWORD"), PASSWORD_BCRYPT);`)
	if err != nil {
		return nil, err
	}
	users := "alice:" + strings.TrimSpace(hash) + ":Alice:alice@example.test:admin,user\n"
	prepend := filepath.Join(dir, "prepend.php")
	for name, text := range map[string]string{
		filepath.Join(conf, "local.php"):      local,
		filepath.Join(conf, "users.auth.php"): users,
		prepend:                               fmt.Sprintf("<?php\ndefine('DOKU_CONF', '%s/');\n", conf),
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	d := &dokuwiki{base: "http://127.0.0.1:" + strconv.Itoa(port)}
	d.proc, err = w.spawn("dokuwiki", dir, dokuwikiRoot, nil,
		"php", "-d", "auto_prepend_file="+prepend, "-S", "127.0.0.1:"+strconv.Itoa(port), "-t", dokuwikiRoot)
	if err != nil {
		return nil, err
	}
	return d, waitHTTP(d.proc, d.base+"/doku.php?id=start", 200, time.Minute)
}

// checks is how many logins DokuWiki answered with status: 403 is a
// failed password check, 302 a session started (the server's log lines
// "[403]: POST /doku.php").
func (d *dokuwiki) checks(status int) int {
	b, _ := os.ReadFile(d.logPath)
	return strings.Count(string(b), "["+strconv.Itoa(status)+"]: POST /doku.php")
}
