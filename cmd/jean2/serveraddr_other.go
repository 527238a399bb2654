//go:build !unix

package main

// processAlive cannot tell here: the client's health check finds a stale file out.
func processAlive(int) bool { return true }
