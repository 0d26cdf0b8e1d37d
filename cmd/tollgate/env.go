package main

import "strings"

// envVars are the environment variables the binary reads, in the order
// `tollgate help` lists them: the one place that names them for users.
// TestHelp_ListsEveryVariableTheCodeReads fails when code linked into the
// binary reads a variable that is not here, or one here is read nowhere.
var envVars = []struct {
	name string
	// help is one line, or several separated by "\n".
	help string
}{
	{"TOLLGATE_CONFIG", "config file, when -config is not given"},
	{"TOLLGATE_LISTEN", "host:port to listen on (default 127.0.0.1:8080; loopback only without auth);\nhealthcheck's default port"},
	{"TOLLGATE_SECRET", "key for identifier hashes and tokens, at least 32 bytes, the same on every\ninstance (default: random per process, so state does not survive a restart)"},
	{"TOLLGATE_SECRET_FILE", "a file holding the secret instead (systemd credentials, Compose and\nKubernetes secrets); its trailing line end is dropped"},
	{"TOLLGATE_LOG_LEVEL", "debug, info, warn or error (default info)"},
	{"TOLLGATE_REDIS_URL", "one Redis node: redis://[user:pass@]host:port[/db], rediss:// for TLS\n(default: the memory store)"},
	{"TOLLGATE_REDIS_CLUSTER_ADDRS", "Redis Cluster seed addresses, comma-separated"},
	{"TOLLGATE_REDIS_SENTINEL_ADDRS", "Redis Sentinel addresses, comma-separated"},
	{"TOLLGATE_REDIS_SENTINEL_MASTER", "the name of the master the Sentinels monitor"},
	{"TOLLGATE_REDIS_USERNAME", "Redis ACL user"},
	{"TOLLGATE_REDIS_PASSWORD", "Redis password"},
	{"TOLLGATE_REDIS_PASSWORD_FILE", "a file holding the Redis password instead"},
	{"TOLLGATE_TOKEN", "admin: the bearer token, when -token is not given"},
}

// usage is what `tollgate help` prints: the commands, then envVars.
var usage = commandUsage + environmentHelp()

// environmentHelp lists envVars: a name and its help on one line where the
// name is short, else the help on the lines below it.
func environmentHelp() string {
	const col = 22
	var b strings.Builder
	b.WriteString("\nenvironment:\n")
	for _, v := range envVars {
		b.WriteString("  " + v.name)
		pad := col - 2 - len(v.name)
		for i, line := range strings.Split(v.help, "\n") {
			if i > 0 || pad < 2 {
				b.WriteString("\n" + strings.Repeat(" ", col))
			} else {
				b.WriteString(strings.Repeat(" ", pad))
			}
			b.WriteString(line)
		}
		b.WriteString("\n")
	}
	return b.String()
}
