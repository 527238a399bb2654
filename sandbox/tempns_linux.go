//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The temporary folders' quota (SessionTempMB) holds by the kernel only on a tmpfs of that
// size, and only a process with CAP_SYS_ADMIN over its mount namespace may mount one. A
// root jean2 mounts them itself. An ordinary user's jean2 gets that power the way rootless
// containers do: at start it runs again in a user namespace and a mount namespace of its
// own (EnterTempNamespace), as the same user. Every worker and command it starts copies
// that mount namespace, so they and jean2 itself see the same tmpfs at the same path: a
// file a command writes in $TMPDIR is the one read-file reads, and the tmpfs lives as long
// as jean2, across commands. The tmpfs belongs to jean2's user namespace, which maps only
// the user: it holds nothing the user could not hold.
//
// jean2 itself keeps no capability there: the process that enters the namespaces is a
// small mounter (the jean2 binary as `__sandbox-exec --temp-mounter`), which starts jean2
// as its child without any and afterwards does one thing on its request: mount or unmount
// a tmpfs on a temporary folder (TempMounter). So nothing jean2 starts unconfined (git, an
// unsandboxed MCP server) inherits a power over jean2's mounts.

// tempMounterEnv names, in jean2's environment, the descriptor of its mounter's socket,
// or "none" when jean2 runs in the namespaces but its mounter may not mount.
const tempMounterEnv = "JEAN2_TEMP_MOUNTER"

// tempNSOptOut turns the namespaces off when set to "off" (a system where they get in the
// way): the temporary folders' quota is then measured.
const tempNSOptOut = "JEAN2_TEMP_NAMESPACE"

// EnterTempNamespace runs this program again, with the same arguments, in a user and mount
// namespace of its own under its mounter, when it is not root and the kernel allows an
// ordinary user a user namespace; it returns the program's exit code and true then (main
// exits with it). It returns false when the program runs here, as it is: as root, already
// in its namespaces, turned off, or where the namespaces cannot be had.
func EnterTempNamespace() (int, bool) {
	if os.Geteuid() == 0 || os.Getenv(tempMounterEnv) != "" || os.Getenv(tempNSOptOut) == "off" {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false
	}
	// The mounter's parent-death signal belongs to the thread that starts it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(exe, append([]string{ExecArg, tempMounterArg}, os.Args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}},
		// An ordinary user keeps no capability across execve: the one it mounts with is
		// carried as ambient; it starts jean2 without it.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return 0, false // no user namespace for this user here: the quota is measured
	}
	return waitForwarding(cmd), true
}

// runTempMounter is the mounter: it starts argv (jean2 as it was started) as its child,
// with no capability and the mounter's socket, serves its requests and ends as it ends.
func runTempMounter(argv []string) int {
	if len(argv) == 0 {
		return ExitLaunchFailed
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "jean2 sandbox: the temp mounter: %v\n", err)
		return ExitLaunchFailed
	}
	// jean2 is started from this thread: its ambient set is emptied here (every other
	// thread keeps the capability to mount), and the child's parent-death signal is tied
	// to it.
	runtime.LockOSThread()
	cmd := &exec.Cmd{Path: exe, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	srv := -1
	if tempMountsAllowed() == nil {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			srv = pair[0]
			child := os.NewFile(uintptr(pair[1]), "temp-mounter")
			defer child.Close()
			cmd.ExtraFiles = []*os.File{child}
		}
	}
	if srv >= 0 {
		cmd.Env = append(cmd.Env, tempMounterEnv+"=3")
	} else {
		cmd.Env = append(cmd.Env, tempMounterEnv+"=none")
	}
	if err := dropInheritable(); err != nil {
		fmt.Fprintf(os.Stderr, "jean2 sandbox: the temp mounter: %v\n", err)
		return ExitLaunchFailed
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "jean2 sandbox: the temp mounter: start %s: %v\n", exe, err)
		return ExitLaunchFailed
	}
	if srv >= 0 {
		cmd.ExtraFiles[0].Close() // jean2's end
		go serveTempMounts(srv)
	}
	return waitForwarding(cmd)
}

// dropInheritable empties the calling thread's ambient and inheritable sets, keeping what it
// may do itself: a program it starts gets no capability, not even from a file's
// inheritable capabilities.
func dropInheritable() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear the inheritable capabilities: %w", err)
	}
	return nil
}

// tempMountsAllowed reports whether this process may mount a tmpfs on its temporary
// folders: the mounter's mount namespace must be one of its own (its mounts go nowhere
// else) and a tmpfs must be possible.
func tempMountsAllowed() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	return ProbeTempFS()
}

// waitForwarding waits for cmd, passing it the signals that end a program (sent to this
// process alone, as a service manager does; from a terminal the whole group gets them
// anyway), and returns its exit code: 128+N when a signal N ended it.
func waitForwarding(cmd *exec.Cmd) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "jean2 sandbox: %v\n", err)
		return ExitLaunchFailed
	}
	return 0
}

// TakeTempMounter returns the client of this process's mounter, when it runs under one
// (EnterTempNamespace), and nil otherwise; it takes the descriptor out of the environment
// and out of every program started from here. Main calls it once.
func TakeTempMounter() *TempMounter {
	v := os.Getenv(tempMounterEnv)
	os.Unsetenv(tempMounterEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil
	}
	unix.CloseOnExec(fd)
	return &TempMounter{fd: fd}
}

// Mount makes rel beneath root a tmpfs of mb MiB (MountTempFS): through the mounter, or
// itself when there is none (m nil: a root host).
func (m *TempMounter) Mount(root, rel, source string, mb int) (reused bool, err error) {
	if m == nil {
		return MountTempFS(root, rel, source, mb)
	}
	r, err := m.ask(tempRequest{Op: "mount", Root: root, Rel: rel, Source: source, MB: mb})
	return r.Reused, err
}

// Unmount detaches the tmpfs on dir (UnmountTempFS), through the mounter if there is one.
func (m *TempMounter) Unmount(dir string) error {
	if m == nil {
		return UnmountTempFS(dir)
	}
	_, err := m.ask(tempRequest{Op: "unmount", Dir: dir})
	return err
}

// Probe reports whether Mount can work: a mounter can (it checked before starting jean2).
func (m *TempMounter) Probe() error {
	if m == nil {
		return ProbeTempFS()
	}
	return nil
}

// ask sends req to the mounter with the end of a new socket pair on which it answers, and
// waits for the answer: requests of many goroutines never mix their answers.
func (m *TempMounter) ask(req tempRequest) (tempReply, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return tempReply{}, fmt.Errorf("temp mounter: socketpair: %w", err)
	}
	defer unix.Close(pair[0])
	data, _ := json.Marshal(req)
	err = unix.Sendmsg(m.fd, data, unix.UnixRights(pair[1]), nil, 0)
	unix.Close(pair[1])
	if err != nil {
		return tempReply{}, fmt.Errorf("temp mounter: send the request: %w", err)
	}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(pair[0], buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return tempReply{}, fmt.Errorf("temp mounter: no answer (%v)", err)
		}
		var r tempReply
		if err := json.Unmarshal(buf[:n], &r); err != nil {
			return tempReply{}, fmt.Errorf("temp mounter: answer: %w", err)
		}
		if r.Error != "" {
			return r, errors.New(r.Error)
		}
		return r, nil
	}
}

// serveTempMounts answers jean2's requests on fd until jean2 closes its end.
func serveTempMounts(fd int) {
	buf := make([]byte, 8192)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || (n == 0 && oobn == 0) {
			return
		}
		fds := receivedFDs(oob[:oobn])
		if len(fds) == 0 {
			continue
		}
		for _, extra := range fds[1:] {
			unix.Close(extra)
		}
		data, _ := json.Marshal(handleTempRequest(buf[:n]))
		_, _ = unix.Write(fds[0], data)
		unix.Close(fds[0])
	}
}

func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, msg := range msgs {
		if got, err := unix.ParseUnixRights(&msg); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// handleTempRequest mounts or unmounts as data asks. jean2, its only client, is trusted
// as much as itself: the mounter's power reaches only jean2's own mount namespace.
func handleTempRequest(data []byte) tempReply {
	var req tempRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return tempReply{Error: "temp mounter: bad request: " + err.Error()}
	}
	var err error
	var r tempReply
	switch req.Op {
	case "mount":
		r.Reused, err = MountTempFS(req.Root, req.Rel, req.Source, req.MB)
	case "unmount":
		err = UnmountTempFS(req.Dir)
	default:
		err = fmt.Errorf("temp mounter: unknown request %q", req.Op)
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}
