package store

import "testing"

// ForEachBackend is forEachBackend for the tests of package store_test.
func ForEachBackend(t *testing.T, fn func(t *testing.T, db *DB)) { forEachBackend(t, fn) }

// OpenBackend opens a fresh database of the named backend ("sqlite", "postgres").
func OpenBackend(t testing.TB, name string) *DB {
	for _, b := range backends {
		if b.name == name {
			return b.open(t)
		}
	}
	t.Fatalf("no backend %q", name)
	return nil
}
