package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jean2/jean2/cluster"
	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/store"
)

// ClusterConfig puts the server in a cluster: several instances sharing one database
// (docs/deploy.md). The zero value is one instance, as always.
type ClusterConfig struct {
	// On turns the cluster mechanisms on: turn leases, the reaper, the events feed, the
	// command channel. A database on Postgres turns them on whatever On says.
	On bool
	// Instance is this instance's id ("" → cluster.NewInstanceID(): host:pid:random).
	Instance string
	// LeaseTTL and Poll: see cluster.Options.
	LeaseTTL time.Duration
	Poll     time.Duration
	// Notifier wakes the feed early (Postgres LISTEN); nil polls only.
	Notifier cluster.Notifier
}

// Clustered reports whether the server is one of several instances sharing its database.
func (s *Server) Clustered() bool { return s.node != nil }

// Instance is this server's instance id: in its logs (cluster mode), in GET /api/status.
func (s *Server) Instance() string { return s.instance }

// statusView is GET /api/status.
type statusView struct {
	Instance string `json:"instance"`
	Version  string `json:"version"`
	Cluster  bool   `json:"cluster"`
	// LeaseTTLSeconds is how long a turn's lease lasts unrenewed (cluster mode).
	LeaseTTLSeconds float64 `json:"leaseTtlSeconds,omitempty"`
	Database        string  `json:"database"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	v := statusView{Instance: s.instance, Version: s.cfg.Version, Cluster: s.node != nil, Database: "sqlite"}
	if s.db.PostgresURL() != "" {
		v.Database = "postgres"
	}
	if s.node != nil {
		v.LeaseTTLSeconds = s.node.LeaseTTL().Seconds()
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// running reports whether the session runs a turn here or, in a cluster, on another live
// instance.
func (s *Server) running(ctx context.Context, sessionID string) bool {
	if s.harness.Running(sessionID) {
		return true
	}
	if s.node == nil {
		return false
	}
	_, other, err := s.node.Holder(ctx, sessionID)
	if err != nil {
		s.log.Warn("read a session's turn lease", "session", sessionID, "error", err)
	}
	return other
}

// pending lists the session's asks waiting for a person: this instance's, and in a cluster
// those waiting on other instances as the log tells them.
func (s *Server) pending(ctx context.Context, sessionID string) []hub.PendingAsk {
	local := s.hub.Pending(sessionID)
	if s.node == nil || sessionID == "" {
		return local
	}
	fromLog, err := s.node.PendingAsks(ctx, sessionID)
	if err != nil {
		s.log.Warn("read the asks pending on other instances", "session", sessionID, "error", err)
		return local
	}
	return cluster.MergePending(local, fromLog)
}

// stop stops the session's turn here or, in a cluster, on the instance that runs it.
func (s *Server) stop(ctx context.Context, sessionID string) (stopped bool, instance string, err error) {
	if s.harness.Stop(sessionID) {
		return true, s.instance, nil
	}
	if s.node == nil {
		return false, "", nil
	}
	instance, stopped, err = s.node.Stop(ctx, sessionID)
	if errors.Is(err, cluster.ErrNoReply) {
		return false, instance, errorf(http.StatusGatewayTimeout, codeUnavailable, "%v", err)
	}
	return stopped, instance, err
}

// codeWorkspaceElsewhere: the workspace's folder is not on this instance's disk.
const codeWorkspaceElsewhere = "workspace_elsewhere"

// folderHere refuses, in a cluster, a turn in a session whose workspace folder this
// instance's disk does not have (another host's disk has it): 421, so the client or the load
// balancer sends it to an instance that has it. A lone instance finds the folder missing the
// way it always did.
func (s *Server) folderHere(ctx context.Context, ses store.Session) error {
	if s.node == nil {
		return nil
	}
	ws, err := s.db.Workspace(ctx, ses.WorkspaceID)
	if err != nil {
		return storeErr(err, "workspace "+ses.WorkspaceID)
	}
	if fi, err := os.Stat(ws.Path); err == nil && fi.IsDir() {
		return nil
	}
	return errorf(http.StatusMisdirectedRequest, codeWorkspaceElsewhere,
		"workspace %s's folder %s is not on instance %s: send this session's requests to an instance whose disk has it, or mount the workspaces on every instance (docs/deploy.md)",
		ws.ID, ws.Path, s.instance)
}

// busyError is the 409 of a session that runs a turn (here, or on the instance its lease
// names) for an action that needs it idle.
func busyError(sessionID string, err error, what string) error {
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return errorf(http.StatusConflict, codeBusy, "session %s is running a turn on instance %s; %s", sessionID, held.Held.InstanceID, what)
	}
	return errorf(http.StatusConflict, codeBusy, "session %s is running a turn; %s", sessionID, what)
}

// openCluster makes the cluster node before the hub and the harness that use it.
func (s *Server) openCluster(cfg ClusterConfig) error {
	pgURL := s.db.PostgresURL()
	// On Postgres an instance is always ready for others: they may start any time.
	if !cfg.On && pgURL == "" {
		return nil
	}
	if cfg.Notifier == nil && pgURL != "" {
		cfg.Notifier = cluster.PGNotifier{URL: pgURL}
	}
	previous, err := s.rememberInstance()
	if err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	node, err := cluster.New(cluster.Options{Store: s.db, Instance: s.instance, Previous: previous, LeaseTTL: cfg.LeaseTTL, Poll: cfg.Poll,
		Notifier: cfg.Notifier, ServerEvents: s.fromServerLog, ServerAfter: s.serverAfter, Logger: s.cfg.Logger}) // the node names the instance itself
	if err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	s.node = node
	return nil
}

// leaser is the harness's Leaser: the node in a cluster, none on one instance.
func (s *Server) leaser() harness.Leaser {
	if s.node == nil {
		return nil
	}
	return s.node
}

// attachedElsewhere is the hub's AttachedElsewhere in a cluster.
func (s *Server) attachedElsewhere() func(string) bool {
	if s.node == nil {
		return nil
	}
	return s.node.AttachedElsewhere
}

// fromServerLog applies what any instance announced on the server log: a grant given
// through another instance is taken up from the database, one revoked there is forgotten;
// providers changed through another instance are read back from the database; settings changed through another instance's
// API are read back from the database and applied here (its own changes read back equal,
// and change nothing).
func (s *Server) fromServerLog(ctx context.Context, evs []store.Event) {
	given := false
	for _, ev := range evs {
		switch ev.Type {
		case eventGrantGiven:
			given = true
		case eventGrantRevoked:
			var g struct{ ID string }
			if json.Unmarshal(ev.Payload, &g) != nil || g.ID == "" {
				continue
			}
			// The instance that revoked it deleted it from the database already.
			if s.grants.Forget(g.ID) {
				s.log.Info("forgot a grant revoked through another instance", "grant", g.ID)
			}
		}
	}
	if given {
		// Read after the revocations above: a grant given and revoked in this batch is
		// not taken up.
		if n, err := s.grants.Adopt(ctx); err != nil {
			s.log.Warn("take up the grants given through another instance", "error", err)
		} else if n > 0 {
			s.log.Info("took up grants given through another instance", "grants", n)
		}
	}
	if slices.ContainsFunc(evs, func(ev store.Event) bool { return ev.Type == eventProvidersChanged }) {
		if changed, err := s.providers.pull(ctx); err != nil {
			s.log.Warn("apply the providers another instance changed", "error", err)
		} else if changed {
			s.log.Info("applied the providers another instance changed")
		}
	}
	if !slices.ContainsFunc(evs, func(ev store.Event) bool { return ev.Type == "settings.changed" }) {
		return
	}
	before := s.settings.get()
	st, changed, err := s.settings.reload(ctx)
	if err != nil {
		s.log.Warn("read the settings another instance changed", "error", err)
		return
	}
	if !changed {
		return
	}
	s.applySettings(st)
	if !slices.Equal(before.DisabledBuiltins, st.DisabledBuiltins) {
		if err := s.applyDisabledBuiltins(ctx, st.DisabledBuiltins); err != nil {
			s.log.Warn("apply the built-ins another instance disabled", "error", err)
		}
	}
	s.log.Info("applied the settings another instance changed")
}

// instanceFile keeps, in $JEAN2_HOME, the id of the instance that last ran on that home.
const instanceFile = "instance"

// rememberInstance returns the id of the previous run on this home ("" for none) and
// writes this run's: a restarted instance so knows which leases were its own, and seals
// their turns at once instead of waiting for them to expire.
func (s *Server) rememberInstance() (string, error) {
	path := filepath.Join(s.cfg.Host.Layout.Home, instanceFile)
	prev, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read the previous instance id: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, []byte(s.instance+"\n")); err != nil {
		return "", host.ExplainStorage("write the instance id", path, err)
	}
	return strings.TrimSpace(string(prev)), nil
}
