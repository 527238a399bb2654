package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/install"
	"github.com/jean2/jean2/store"
)

// databaseURL is where the commands that open the store (serve, chat) keep it when not in
// $JEAN2_HOME/jean2.db: JEAN2_DATABASE_URL, else "databaseURL" in $JEAN2_HOME/config.json,
// a postgres:// URL. "" means the SQLite default.
func databaseURL(e env, layout host.Layout) (string, error) {
	url, from := strings.TrimSpace(e.getenv("JEAN2_DATABASE_URL")), "JEAN2_DATABASE_URL"
	if url == "" {
		path := install.ConfigFile(layout)
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", nil
		case err != nil:
			return "", fmt.Errorf("read %s: %w", path, err)
		}
		var cfg struct {
			DatabaseURL string `json:"databaseURL"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return "", fmt.Errorf("%s is not valid JSON: %w", path, err)
		}
		url, from = strings.TrimSpace(cfg.DatabaseURL), "databaseURL in "+path
	}
	if url != "" && !store.IsPostgresURL(url) {
		return "", usagef("%s: %q is not a postgres:// URL (postgres://user:password@host:5432/database; leave it unset for $JEAN2_HOME/jean2.db)",
			from, store.RedactURL(url))
	}
	return url, nil
}
