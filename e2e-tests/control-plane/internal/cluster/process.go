// Processes of a control-plane run: each component is the harness binary started again with a
// subcommand, its output in the run's logs directory, and killed by the kernel if the process
// that started it dies, so a failed or interrupted run leaves nothing behind.
package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// process is one running component.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess runs `binary args...` with its output in logs/NAME.log.
func startProcess(logs, name, binary string, args ...string) (*process, error) {
	log, err := os.OpenFile(filepath.Join(logs, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	// Pdeathsig is tied to the thread that forks: hold this goroutine on its thread while the
	// child starts, so the signal follows the process that owns the run.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has stopped, and why.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.err == nil {
			return true, errors.New("exited")
		}
		return true, p.err
	default:
		return false, nil
	}
}

// stop asks the process to end, then kills it if it has not within the grace period.
func (p *process) stop(grace time.Duration) {
	if done, _ := p.exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// FreePort asks the kernel for a free port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
