package sandbox

// TempMounter is jean2's client of its mounter (EnterTempNamespace, Linux): it mounts and
// unmounts the tmpfs of the temporary folders for a jean2 that may not mount itself. Its
// methods work on a nil TempMounter too: then jean2 mounts itself (a root host).
type TempMounter struct {
	fd int // the mounter's socket (SOCK_SEQPACKET); each request brings its reply socket
}

// tempRequest is one request to the mounter; tempReply its answer.
type tempRequest struct {
	Op     string `json:"op"` // "mount" or "unmount"
	Root   string `json:"root,omitempty"`
	Rel    string `json:"rel,omitempty"`
	Source string `json:"source,omitempty"`
	MB     int    `json:"mb,omitempty"`
	Dir    string `json:"dir,omitempty"`
}

type tempReply struct {
	Reused bool   `json:"reused,omitempty"`
	Error  string `json:"error,omitempty"`
}

// tempMounterArg makes the launcher the mounter: `__sandbox-exec --temp-mounter ARGV…`.
const tempMounterArg = "--temp-mounter"
