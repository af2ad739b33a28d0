package etcd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// embedConfig builds the embed config every mode shares; Start adds the
// cluster state. It also returns the logger etcd will use, for our own lines.
func (r *resolved) embedConfig() (*embed.Config, *zap.Logger, error) {
	cfg := embed.NewConfig()
	cfg.Name = r.Name
	cfg.Dir = r.DataDir
	cfg.ListenPeerUrls = r.listenPeer
	cfg.ListenClientUrls = r.listenClient
	cfg.AdvertisePeerUrls = r.advertisePeer
	cfg.AdvertiseClientUrls = r.advertiseClient

	if r.HeartbeatInterval > 0 {
		ms, err := millis("heartbeat interval", r.HeartbeatInterval)
		if err != nil {
			return nil, nil, err
		}

		cfg.TickMs = ms
	}

	if r.ElectionTimeout > 0 {
		ms, err := millis("election timeout", r.ElectionTimeout)
		if err != nil {
			return nil, nil, err
		}

		cfg.ElectionMs = ms
	}

	ca := filepath.Join(r.PKIDir, CACertFile)
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile:       filepath.Join(r.PKIDir, ServerCertFile),
		KeyFile:        filepath.Join(r.PKIDir, ServerKeyFile),
		TrustedCAFile:  ca,
		ClientCertAuth: true,
	}
	cfg.PeerTLSInfo = transport.TLSInfo{
		CertFile:       filepath.Join(r.PKIDir, PeerCertFile),
		KeyFile:        filepath.Join(r.PKIDir, PeerKeyFile),
		TrustedCAFile:  ca,
		ClientCertAuth: true,
	}

	if err := applyExtraArgs(cfg, r.ExtraArgs); err != nil {
		return nil, nil, err
	}

	lg, err := newLogger(r.Log, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return nil, nil, err
	}

	// Our own logger: etcd's default opens stderr or journald by name.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)

	return cfg, lg, nil
}

func millis(what string, d time.Duration) (uint, error) {
	if d < time.Millisecond || d%time.Millisecond != 0 {
		return 0, fmt.Errorf("etcd: %s %v must be a whole number of milliseconds", what, d)
	}

	return uint(d / time.Millisecond), nil
}

// newLogger writes etcd's log lines to w in etcd's own encoding, or
// discards them when w is nil.
func newLogger(w io.Writer, level, format string) (*zap.Logger, error) {
	if w == nil {
		return zap.NewNop(), nil
	}

	encoding, err := logutil.ConvertToZapFormat(format)
	if err != nil {
		return nil, fmt.Errorf("etcd log: %w", err)
	}

	encCfg := logutil.DefaultZapLoggerConfig.EncoderConfig

	var enc zapcore.Encoder = zapcore.NewJSONEncoder(encCfg)
	if encoding == logutil.ConsoleLogFormat {
		enc = zapcore.NewConsoleEncoder(encCfg)
	}

	// Lock: etcd logs from many goroutines and w need not be safe for that.
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), logutil.ConvertToZapLevel(level))

	return zap.New(core, zap.AddCaller()), nil
}

// IsInitialized reports whether dataDir holds a member (its WAL), that is
// whether Start should Resume rather than Bootstrap or Join.
func IsInitialized(dataDir string) bool {
	return wal.Exist(filepath.Join(dataDir, "member", "wal"))
}

// dirEmpty reports whether dir is missing or has no entries.
func dirEmpty(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}

	if err != nil {
		return false, err
	}

	return len(entries) == 0, nil
}

// wipeDir removes the contents of dir but not dir itself, which may be a
// mount point or carry ownership and mode the node set up.
func wipeDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}

	if err != nil {
		return fmt.Errorf("wipe %s: %w", dir, err)
	}

	var errs []error

	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}

	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wipe %s: %w", dir, err)
	}

	return nil
}
