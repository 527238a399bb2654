//go:build !linux

package sandbox

import (
	"errors"
	"net"
)

// NetNS is a worker's network namespace, which exists only on Linux.
type NetNS struct{ Listener net.Listener }

// ProxyPort is the port of the proxy's listener in a worker's namespace.
const ProxyPort = 3128

var errNoNetNS = errors.New("network namespaces exist only on Linux")

// NewNetNS reports that there are no network namespaces here.
func NewNetNS(int) (*NetNS, error) { return nil, errNoNetNS }

func (n *NetNS) Path() string { return "" }
func (n *NetNS) Close() error { return nil }

// NetNSAvailable reports that there are no network namespaces here.
func NetNSAvailable() error { return errNoNetNS }

func joinNetNS(string) error { return errNoNetNS }

// LandlockNetwork reports that there is no Landlock outside Linux.
func LandlockNetwork() bool { return false }
