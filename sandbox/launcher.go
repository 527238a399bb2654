package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
)

// ExitLaunchFailed is the launcher's exit code when it could not apply the spec or start
// the program (as a shell's 126: found but could not be executed).
const ExitLaunchFailed = 126

// Main is the launcher: `jean2 __sandbox-exec --spec JSON -- PROGRAM ARGS…` with args the
// words after ExecArg. It applies the spec to itself and becomes PROGRAM; it returns only
// when that failed, with the exit code to use, having said why on stderr (the host quotes a
// worker's last stderr lines when it fails to start).
func Main(args []string, stderr io.Writer) int {
	if len(args) == 2 && args[0] == probeSealArg {
		// The namespace belongs to the thread that makes it; the check runs there too.
		runtime.LockOSThread()
		if err := probeSeal(args[1]); err != nil {
			fmt.Fprintf(stderr, "jean2 sandbox: %v\n", err)
			return ExitLaunchFailed
		}
		return 0
	}
	if len(args) >= 1 && args[0] == tempMounterArg {
		return runTempMounter(args[1:])
	}
	spec, program, rest, err := parseArgs(args)
	if err == nil {
		err = enter(spec, program, rest)
	}
	fmt.Fprintf(stderr, "jean2 sandbox: %v\n", err)
	return ExitLaunchFailed
}

func parseArgs(args []string) (Spec, string, []string, error) {
	var specText string
	haveSpec := false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--spec":
			if i+1 >= len(args) {
				return Spec{}, "", nil, errors.New("--spec needs a value")
			}
			specText, haveSpec = args[i+1], true
			i++
		case "--":
			if !haveSpec {
				return Spec{}, "", nil, errors.New("usage: " + ExecArg + " --spec JSON -- PROGRAM [ARGS…]")
			}
			if i+1 >= len(args) {
				return Spec{}, "", nil, errors.New("no program after --")
			}
			spec, err := DecodeSpec(specText)
			if err != nil {
				return Spec{}, "", nil, err
			}
			return spec, args[i+1], args[i+2:], nil
		default:
			return Spec{}, "", nil, fmt.Errorf("unexpected argument %q; usage: %s --spec JSON -- PROGRAM [ARGS…]", args[i], ExecArg)
		}
	}
	return Spec{}, "", nil, errors.New("usage: " + ExecArg + " --spec JSON -- PROGRAM [ARGS…]")
}

// StartConfined sets how cmd, the launcher of spec, starts. Where the host is not root it
// starts in a user namespace of its own (st.UserNS), as the same user, which lets the
// launcher build its view of the machine and makes the pid namespace possible. It starts in
// a pid namespace of its own where the host can make one (st.PidNS), so that nothing the
// program starts outlives jean2. A program that may start no process (NoFork) needs none:
// it dies with jean2 by the parent-death signal, and the launcher could not start it as a
// child. It reports whether cmd will start in a pid namespace.
func (st Status) StartConfined(cmd *exec.Cmd, spec Spec) bool {
	if spec.Seatbelt != nil {
		return false
	}
	if st.UserNS {
		InUserNamespace(cmd)
	}
	if !st.PidNS || spec.NoFork {
		return false
	}
	InPidNamespace(cmd)
	return true
}
