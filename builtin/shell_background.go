package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jean2/jean2/tool"
)

// Background commands (dev servers, watchers): started confined like any command, their
// output (stdout and stderr together) going to a file in the session's folder, ended by
// {"stop": id}, when they exit, or when the shell closes. A command cannot end one itself:
// each runs in a Landlock domain of its own, and Landlock refuses signals across domains.

const maxBackgroundJobs = 8 // per session

// bgJob is one background command.
type shellJob struct {
	id, session, command, output string
	cf                           *shellConfined
	done                         chan struct{}
	code                         int
}

// backgroundInfo is what the result says of a background command.
type shellBackgroundInfo struct {
	ID     string `json:"id"`
	Output string `json:"output"`
	// Running is false once the command has exited (or was stopped).
	Running bool `json:"running"`
}

func (t *shellTool) startBackground(c *tool.Context, bash, command, cwd string, network, writable []string) tool.Result {
	// Jobs are kept by session, and every sessionless call (a stateless MCP client's, the
	// API's Run form's) has the same empty one, whatever its workspace: another such call
	// stopped the job and read its output (TestShellAttackSessionlessBackgroundOfAnotherCall).
	// Nor has a sessionless call a later call of its own to stop it from.
	if c.SessionID == "" {
		return tool.Errorf("shell: a background command needs a session to keep it and stop it from, and this call has none (a stateless MCP client's, or the API's Run form's): run it in the foreground, with a timeout")
	}
	t.mu.Lock()
	n := 0
	for _, j := range t.jobs {
		if j.session == c.SessionID {
			n++
		}
	}
	t.mu.Unlock()
	if n >= maxBackgroundJobs {
		return tool.Errorf("this session already runs %d background commands: stop one first ({\"stop\": id})", n)
	}
	// Nothing waits on a background command's asks: what it is refused, it is refused.
	cf, err := t.sb.command(c, bash, command, cwd, network, writable, nil)
	if err != nil {
		return tool.Result{Error: err.Error()}
	}
	f, err := shellCreateOutput(c.TempDir, "shell-bg-")
	if err != nil {
		cf.closeNet()
		return tool.Errorf("shell: background output file in %s: %v", c.TempDir, err)
	}
	cmd := cf.cmd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, f, f
	shellOwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		f.Close()
		cf.closeNet()
		return tool.Errorf("shell: start %s: %v", cmd.Path, err)
	}
	f.Close()
	t.mu.Lock()
	t.seq++
	job := &shellJob{id: "bg-" + strconv.Itoa(t.seq), session: c.SessionID, command: command, output: f.Name(), cf: cf, done: make(chan struct{})}
	t.jobs[job.id] = job
	t.mu.Unlock()
	go func() {
		werr := cmd.Wait()
		shellKillGroup(cmd)
		cf.release()
		cf.closeNet()
		job.code = shellExitCode(cmd, werr)
		close(job.done)
	}()
	res := shellResult{
		Stdout:     fmt.Sprintf("started in the background as %s; its output goes to %s; stop it with {\"stop\": %q}\n", job.id, job.output, job.id),
		Background: &shellBackgroundInfo{ID: job.id, Output: job.output, Running: true},
	}
	out := tool.Success(res)
	out.Visualization, _ = json.Marshal(map[string]any{"type": tool.VizShellOutput, "command": shellTruncate(command, 100), "stdout": res.Stdout, "exitCode": 0})
	return out
}

// stopBackground ends a background command of this session and returns the end of its
// output and its exit code.
func (t *shellTool) stopBackground(c *tool.Context, id string) tool.Result {
	t.mu.Lock()
	job, ok := t.jobs[id]
	if ok && (job.session != c.SessionID || c.SessionID == "") {
		ok = false
	}
	if ok {
		delete(t.jobs, id)
	}
	t.mu.Unlock()
	if !ok {
		return tool.Errorf("no background command %s in this session", id)
	}
	code := -1
	if job.stop() {
		code = job.code
	}
	res := shellResult{ExitCode: code, Background: &shellBackgroundInfo{ID: job.id, Output: job.output}}
	res.Stdout = shellTailOf(job.output, t.opts.MaxOutput)
	out := tool.Success(res)
	vz := map[string]any{"type": tool.VizShellOutput, "command": shellTruncate(job.command, 100), "exitCode": res.ExitCode}
	if res.Stdout != "" {
		vz["stdout"] = res.Stdout
	}
	out.Visualization, _ = json.Marshal(vz)
	return out
}

// stop ends the job's process group and cgroup and waits (boundedly) for it to be reaped;
// false when it was not reaped in time.
func (j *shellJob) stop() bool {
	select {
	case <-j.done:
		return true
	default:
	}
	shellKillGroup(j.cf.cmd)
	j.cf.release()
	select {
	case <-j.done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// EndSession ends the session's background commands and forgets the command prefixes it
// allowed network for: the session is over (deleted), and a dev server it started must not
// outlive it. The host calls it (host.Host.EndSession).
func (t *shellTool) EndSession(_ context.Context, sessionID string) error {
	t.mu.Lock()
	var jobs []*shellJob
	for id, j := range t.jobs {
		if j.session == sessionID {
			jobs = append(jobs, j)
			delete(t.jobs, id)
		}
	}
	for k := range t.granted {
		if strings.HasPrefix(k, sessionID+"\x00") {
			delete(t.granted, k)
		}
	}
	t.mu.Unlock()
	t.sb.exits.endSession(sessionID)
	var stuck []string
	for _, j := range jobs {
		if !j.stop() {
			stuck = append(stuck, j.id)
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("shell: background commands %s of session %s did not end in time", strings.Join(stuck, ", "), sessionID)
	}
	return nil
}

// stopAll ends every background command (the shell closes).
func (t *shellTool) stopAll(context.Context) {
	t.mu.Lock()
	jobs := t.jobs
	t.jobs = map[string]*shellJob{}
	t.mu.Unlock()
	for _, j := range jobs {
		j.stop()
	}
}

// tailOf is the last max bytes of a file.
func shellTailOf(path string, max int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - int64(max)
	prefix := ""
	if off > 0 {
		prefix = fmt.Sprintf("[… %d bytes before; the whole output is in %s …]\n", off, path)
	} else {
		off = 0
	}
	data, _ := io.ReadAll(io.NewSectionReader(f, off, int64(max)))
	return prefix + string(data)
}

// StartsProcesses tells the host that a command writes without ctx.fs (host.ProcessStarter):
// the session's temporary folder is measured after each call.
func (t *shellTool) StartsProcesses() bool { return true }
