package lab

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// addressNet is the loopback range lab nodes take their addresses from
// (127.77.0.0/16): all of 127.0.0.0/8 is loopback on Linux, and nothing
// else on these machines uses this part of it (Debian puts the host name
// on 127.0.1.1).
const addressNet = "127.77"

// addressLockDir holds one lock file per address in use. Labs in other
// processes (parallel suites, the bench) take addresses from the same
// range; a flock held for the lab's life keeps them apart, and the kernel
// drops it when the process dies, so a killed lab leaks nothing.
var addressLockDir = filepath.Join(os.TempDir(), "ferric-lab-addresses")

// address is a node address the lab holds.
type address struct {
	ip   string
	lock *os.File
}

// reserveAddress takes a free address of addressNet, starting the search
// at a random place so concurrent labs rarely contend.
func reserveAddress() (*address, error) {
	if err := os.MkdirAll(addressLockDir, 0o777); err != nil {
		return nil, fmt.Errorf("lab: address locks: %w", err)
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	const hosts = 254 * 254
	start := (int(b[0])<<8 | int(b[1])) % hosts
	for i := range hosts {
		n := (start + i) % hosts
		ip := fmt.Sprintf("%s.%d.%d", addressNet, n/254+1, n%254+1)
		f, err := os.OpenFile(filepath.Join(addressLockDir, ip), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, fmt.Errorf("lab: address lock %s: %w", ip, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &address{ip: ip, lock: f}, nil
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lab: lock address %s: %w", ip, err)
		}
	}
	return nil, errors.New("lab: every address of " + addressNet + ".0.0/16 is taken")
}

// release lets another lab use the address. The lock file stays: removing
// it could race with a lab that just opened it.
func (a *address) release() error {
	if a == nil {
		return nil
	}
	return a.lock.Close()
}
