package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDB is a private mariadbd on its own loopback port and data
// directory, for the specs that stop the database or configure it in ways
// the machine's shared server must not be (TLS): that one is never
// touched.
type MariaDB struct {
	Port  int
	dir   string
	extra []string
	cmd   *exec.Cmd
	done  chan struct{}
}

// StartMariaDB initialises a data directory under dir and starts the
// server on a free loopback port; extra are more mariadbd options, such as
// --ssl-ca.
func StartMariaDB(ctx context.Context, dir string, extra ...string) (*MariaDB, error) {
	data := filepath.Join(dir, "data")
	install := exec.CommandContext(ctx, "mariadb-install-db", "--no-defaults", "--auth-root-authentication-method=normal",
		"--skip-test-db", "--datadir="+data)
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadb-install-db: %w\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	m := &MariaDB{Port: port, dir: dir, extra: extra}
	return m, m.Start(ctx)
}

// Start starts the server on its data directory and waits until it
// accepts connections.
func (m *MariaDB) Start(ctx context.Context) error {
	log, err := os.OpenFile(filepath.Join(m.dir, "mariadbd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append([]string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"),
		"--bind-address=127.0.0.1", "--port=" + strconv.Itoa(m.Port), "--socket=" + filepath.Join(m.dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(m.dir, "mysqld.pid"), "--skip-log-bin", "--innodb-buffer-pool-size=32M",
		"--max-connections=200", "--skip-name-resolve", "--user=" + currentUser()}, m.extra...)
	m.cmd = exec.Command("mariadbd", args...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start mariadbd: %w", err)
	}
	m.done = make(chan struct{})
	go func() {
		_ = m.cmd.Wait()
		log.Close()
		close(m.done)
	}()
	return m.waitReady(ctx)
}

// Admin connects as root, over TCP without TLS.
func (m *MariaDB) Admin() (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", m.Port)
	cfg.Timeout = time.Second
	return sql.Open("mysql", cfg.FormatDSN())
}

func (m *MariaDB) waitReady(ctx context.Context) error {
	db, err := m.Admin()
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-m.done:
			return fmt.Errorf("mariadbd exited before accepting connections: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd not ready: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Server is the connection URL of the server, for a database name to be
// appended.
func (m *MariaDB) Server() string { return fmt.Sprintf("mysql://root@127.0.0.1:%d/", m.Port) }

// CreateDatabase creates a database and returns Ferric's connection URL
// for it.
func (m *MariaDB) CreateDatabase(ctx context.Context, name string) (string, error) {
	db, err := m.Admin()
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"`"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return m.Server() + name, nil
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it.
func (m *MariaDB) Kill() error { return m.stop(syscall.SIGKILL) }

// Stop shuts the server down cleanly (SIGTERM) and waits for it.
func (m *MariaDB) Stop() error { return m.stop(syscall.SIGTERM) }

func (m *MariaDB) stop(sig syscall.Signal) error {
	if m.cmd == nil {
		return nil
	}
	select {
	case <-m.done:
		return nil
	default:
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal mariadbd %d: %w", m.cmd.Process.Pid, err)
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(60 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
		return fmt.Errorf("mariadbd %d ignored %s for 60s; killed", m.cmd.Process.Pid, sig)
	}
}

// currentUser names the user mariadbd runs as: itself, which mariadbd
// accepts from root only when asked by name.
func currentUser() string {
	u, err := user.Current()
	if err != nil {
		return "root"
	}
	return u.Username
}
