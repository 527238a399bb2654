package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkLaunch measures what the launcher adds to starting a worker: the same program
// started directly, through the launcher with limits only, and through the launcher with
// Landlock and a worker's full rule set, and with the view of the machine and a pid namespace
// as every shell command and worker now gets them. /bin/true isolates the launcher's own
// cost; bash is a shell command's; node shows it beside a runtime's start.
//
//	go test ./sandbox -run XXX -bench Launch -benchtime 40x
func BenchmarkLaunch(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("no node")
	}
	truePath, _ := exec.LookPath("true")
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, prog := range []struct {
		name string
		path string
		args []string
	}{{"true", truePath, nil}, {"bash", "/bin/bash", []string{"--noprofile", "--norc", "-c", "true"}}, {"node", node, []string{"-e", "0"}}} {
		plan := Plan{Program: prog.path, RuntimeRoot: RuntimeRoot(prog.path, ""), ReadOnly: []string{dir}, ReadWrite: []string{dir}}
		type variant struct {
			name  string
			spec  *Spec
			pidns bool // the launcher is the init of a pid namespace of its own, as hosts start it
		}
		specs := []variant{
			{"direct", nil, false},
			{"launcher", &Spec{DataMB: 512}, false},
			{"landlock", &Spec{Landlock: true, Rules: plan.Rules(), DataMB: 512}, false},
		}
		if PidNSAvailable() == nil {
			specs = append(specs, variant{"launcher+pidns", &Spec{DataMB: 512}, true},
				variant{"landlock+pidns", &Spec{Landlock: true, Rules: plan.Rules(), DataMB: 512}, true})
		}
		// The same with the folder's .jean2 sealed by a mount (a mount namespace of its own).
		if MountSealAvailable(os.Args[0], os.Geteuid() != 0) == nil {
			sealed, err := PrepareSealDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			specs = append(specs, variant{"landlock+seal", &Spec{Landlock: true, Rules: plan.Rules(), DataMB: 512, SealedDirs: []string{sealed}}, false})
			// What every shell command and worker gets now: the view (a protected folder
			// covered, the place shown again inside it, .jean2 sealed) and a pid namespace.
			hidden := filepath.Join(dir, "home")
			shown := filepath.Join(hidden, "tmp", "s1")
			if err := os.MkdirAll(shown, 0o700); err != nil {
				b.Fatal(err)
			}
			vp := plan
			vp.ReadWrite, vp.Protected, vp.MountSealed = append(vp.ReadWrite, shown), []string{hidden}, []string{sealed}
			view := &Spec{Landlock: true, Rules: vp.Rules(), DataMB: 512, View: vp.View(os.Args[0])}
			specs = append(specs, variant{"landlock+view", view, false}, variant{"landlock+view+pidns", view, true})
		}
		for _, s := range specs {
			b.Run(prog.name+"/"+s.name, func(b *testing.B) {
				if s.spec != nil && s.spec.Landlock {
					needLandlock(b)
				}
				path, args := prog.path, prog.args
				if s.spec != nil {
					path, args, err = Command(os.Args[0], *s.spec, prog.path, prog.args)
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for range b.N {
					cmd := exec.Command(path, args...)
					cmd.Env = []string{"PATH=/usr/bin:/bin"}
					if s.pidns {
						Status{PidNS: true}.StartConfined(cmd, *s.spec)
					}
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
			})
		}
	}
}
