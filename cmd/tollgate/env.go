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
	{"TOLLGATE_REDIS_CLUSTER_KEY_LAYOUT", "subject: a Cluster's keys under subject hash tags (store.redis.cluster_key_layout)"},
	{"TOLLGATE_REDIS_SENTINEL_ADDRS", "Redis Sentinel addresses, comma-separated"},
	{"TOLLGATE_REDIS_SENTINEL_MASTER", "the name of the master the Sentinels monitor"},
	{"TOLLGATE_REDIS_USERNAME", "Redis ACL user"},
	{"TOLLGATE_REDIS_PASSWORD", "Redis password"},
	{"TOLLGATE_REDIS_PASSWORD_FILE", "a file holding the Redis password instead"},
	{"TOLLGATE_TOKEN", "admin: the bearer token, when -token is not given"},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "turns traces on, sent over OTLP/HTTP there (off by default; docs/operating.md, Traces);\nOTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL may only be\nhttp/protobuf or http/json"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "the same, for traces only"},
	{"OTEL_TRACES_EXPORTER", "otlp turns traces on, none keeps them off; no other exporter"},
	{"OTEL_SDK_DISABLED", "true keeps traces off whatever else is set"},
	{"OTEL_TRACES_SAMPLER", "always_on, always_off, traceidratio or their parentbased_ forms (default\nparentbased_always_on); also read by the SDK: OTEL_SERVICE_NAME (default\ntollgate), OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS and the other\nOTEL_EXPORTER_OTLP_* and OTEL_BSP_* variables"},
	{"OTEL_TRACES_SAMPLER_ARG", "the sampler's ratio, 0 to 1"},
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
