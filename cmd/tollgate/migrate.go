package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

const migrateUsage = `usage: tollgate migrate-key-layout [-config FILE] [-remove-old]

Copies a Redis Cluster's keys to their names under subject hash tags
(store.redis.cluster_key_layout: subject), so that switching the layout
forgets no account's backoff: run it while every instance still writes
today's names, turn the setting on instance by instance, then run it again
with -remove-old. A key whose new name holds more failures, or lives
longer, is left as it is. The config (-config, or TOLLGATE_CONFIG) names
the Cluster and the key prefix.
`

// migrateCmd runs `tollgate migrate-key-layout`: see migrateUsage.
func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("tollgate migrate-key-layout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	configFile := fs.String("config", "", "config `FILE` (default $TOLLGATE_CONFIG)")
	removeOld := fs.Bool("remove-old", false, "delete each old name once copied (the last run)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	path := *configFile
	if path == "" {
		path = getenv("TOLLGATE_CONFIG")
	}
	cfg, err := config.Load(path, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate: bad configuration: %v\n", err)
		return 1
	}
	if cfg.Redis == nil || len(cfg.Redis.ClusterAddrs) == 0 {
		fmt.Fprintln(stderr, "tollgate migrate-key-layout: the configuration names no Redis Cluster (store.redis.cluster_addrs)")
		return 1
	}
	r := *cfg.Redis
	r.Timeout = 5 * time.Second // a sweep's calls, not a check's
	client, err := redisstore.NewClient(r)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate migrate-key-layout: %v\n", err)
		return 1
	}
	store, err := redisstore.New(redisstore.Config{Client: client})
	if err != nil {
		fmt.Fprintf(stderr, "tollgate migrate-key-layout: %v\n", err)
		return 1
	}
	defer store.Close()
	st, err := store.MigrateKeyLayout(ctx, redisstore.MigrateOptions{Prefix: cfg.KeyPrefix, RemoveOld: *removeOld})
	fmt.Fprintf(stdout, "scanned %d keys: copied %d, kept %d new names, removed %d old names\n", st.Scanned, st.Copied, st.Kept, st.Removed)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate migrate-key-layout: %v\n", err)
		return 1
	}
	return 0
}
