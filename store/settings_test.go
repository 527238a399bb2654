package store

import (
	"context"
	"errors"
	"testing"
)

func TestSettingsPutGetReplaceSurviveReopen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if _, err := db.Setting(ctx, "server"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Setting of an unset key = %v, want ErrNotFound", err)
		}
		if err := db.PutSetting(ctx, "server", []byte(`{"a":1}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.PutSetting(ctx, "server", []byte(`{"a":2}`)); err != nil {
			t.Fatal(err)
		}
		if err := db.PutSetting(ctx, "server", []byte(`{"a":`)); err == nil {
			t.Fatal("PutSetting took invalid JSON")
		}
		if err := db.PutSetting(ctx, "", []byte(`1`)); err == nil {
			t.Fatal("PutSetting took an empty key")
		}
		db = reopen(t, db)
		got, err := db.Setting(ctx, "server")
		if err != nil || string(got) != `{"a":2}` {
			t.Fatalf("Setting after reopen = %s, %v; want {\"a\":2}", got, err)
		}
	})
}
