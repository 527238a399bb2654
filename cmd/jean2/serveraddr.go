package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jean2/jean2/chat"
	"github.com/jean2/jean2/host"
)

// ServerFile is the file in $JEAN2_HOME where a running server of that home (jean2 serve,
// or the one jean2 chat starts inside itself) says where it listens, so that jean2 chat and
// jean2 signin find it on any port, and a second terminal joins it instead of starting
// another server on the same home (which the undo store's lock refuses).
const ServerFile = "server.json"

// serverAddress is what ServerFile holds.
type serverAddress struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// publishServer writes ServerFile for the server at url run by this process: whole or not
// at all (a temporary file renamed over it), readable by its owner only. remove takes it
// away again unless another server of the home has written its own since.
func publishServer(home, url string) (remove func(), err error) {
	me := serverAddress{URL: url, PID: os.Getpid()}
	data, err := json.Marshal(me)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(home, ".server-*.json")
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", filepath.Join(home, ServerFile), err)
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	path := filepath.Join(home, ServerFile)
	if werr == nil {
		werr = os.Rename(tmp.Name(), path) // CreateTemp made it 0600
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return nil, fmt.Errorf("write %s: %w", path, werr)
	}
	return func() {
		if cur, ok := readServerFile(home); ok && cur == me {
			_ = os.Remove(path)
		}
	}, nil
}

// readServerFile reads ServerFile; ok is false when there is none or it does not parse.
func readServerFile(home string) (serverAddress, bool) {
	data, err := os.ReadFile(filepath.Join(home, ServerFile))
	if err != nil {
		return serverAddress{}, false
	}
	var a serverAddress
	if json.Unmarshal(data, &a) != nil || a.URL == "" || a.PID <= 0 {
		return serverAddress{}, false
	}
	return a, true
}

// runningServer returns the URL of the server ServerFile names when its process still
// runs ("" when there is none, it is stale, or it names no URL a client may use).
func runningServer(home string) string {
	a, ok := readServerFile(home)
	if !ok || !processAlive(a.PID) || chat.CheckServerURL(a.URL) != nil {
		return ""
	}
	return a.URL
}

// serverBase is the server a client command talks to: --server, else $JEAN2_SERVER, else
// the server running on this $JEAN2_HOME, else chat.DefaultServer. named says that the
// person named it (a chat then never starts a server of its own in its place).
func serverBase(e env, flag string) (base string, named bool, err error) {
	switch {
	case flag != "":
		return flag, true, nil
	case e.getenv("JEAN2_SERVER") != "":
		return e.getenv("JEAN2_SERVER"), false, nil
	}
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return "", false, err
	}
	if u := runningServer(layout.Home); u != "" {
		return u, false, nil
	}
	return chat.DefaultServer, false, nil
}
