package main

import (
	"strings"
	"time"

	"github.com/jean2/jean2/server"
)

// clusterConfig reads the environment of an instance of several sharing one database
// (docs/deploy.md): JEAN2_CLUSTER=on, JEAN2_DB (a database file other than
// $JEAN2_HOME/jean2.db, which instances on one host share), JEAN2_INSTANCE_ID,
// JEAN2_LEASE_TTL and JEAN2_CLUSTER_POLL (Go durations). A database on Postgres
// (JEAN2_DATABASE_URL, databaseURL) implies the cluster.
func clusterConfig(e env) (cfg server.ClusterConfig, dbPath string, err error) {
	switch v := strings.ToLower(strings.TrimSpace(e.getenv("JEAN2_CLUSTER"))); v {
	case "", "off", "0", "false":
	case "on", "1", "true":
		cfg.On = true
	default:
		return cfg, "", usagef("JEAN2_CLUSTER=%q: use on (several instances share the database) or off", v)
	}
	dbPath = strings.TrimSpace(e.getenv("JEAN2_DB"))
	cfg.Instance = strings.TrimSpace(e.getenv("JEAN2_INSTANCE_ID"))
	for _, d := range []struct {
		name string
		to   *time.Duration
		min  time.Duration
	}{{"JEAN2_LEASE_TTL", &cfg.LeaseTTL, 300 * time.Millisecond}, {"JEAN2_CLUSTER_POLL", &cfg.Poll, time.Millisecond}} {
		v := strings.TrimSpace(e.getenv(d.name))
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t < d.min {
			return cfg, "", usagef("%s=%q: give a duration of at least %s, such as 30s", d.name, v, d.min)
		}
		*d.to = t
	}
	return cfg, dbPath, nil
}
