//go:build !unix

package server

// openFileLimit is unknown here: the connection cap stays DefaultMaxConns.
func openFileLimit() uint64 { return 0 }
