// Package sandbox confines tool worker processes so that a tool which reaches around its
// context — imports fs, starts a shell, reads /proc — still cannot touch what is not its
// own (docs/security.md).
//
// It owns three things:
//
//   - the plan: from what a worker needs (its runtime, its folder and bundle, the call's
//     workspace, allowed paths and temporary folder, what the tool declared and a person
//     approved) it computes the exact file rules and limits a worker gets (Plan, Spec);
//   - the launcher: jean2 re-executes itself as `jean2 __sandbox-exec --spec JSON -- PROGRAM
//     ARGS…`, which joins the worker's pids and memory cgroups and network namespace, seals
//     each workspace's .jean2 with a read-only mount in a mount namespace of its own, applies
//     Landlock and seccomp filters (no namespaces, no processes without childProcess, no
//     UNIX sockets when the network is isolated) to itself, drops every capability, closes every inherited descriptor but the protocol's, sets
//     resource limits and then executes the runtime (Main); the rules are fixed for the
//     life of the process and everything it starts. The host's cgroup folders (Pids,
//     Memory) end what a worker leaves behind, and a starting host ends what a killed one
//     left (SweepStale);
//   - the fallbacks: Node's permission model (NodePermissionArgs) when Landlock is missing,
//     and the report of what protection is active (Probe, Choose).
//
// Approvals of declared permissions (once per tool version) live here too (Approvals).
package sandbox
