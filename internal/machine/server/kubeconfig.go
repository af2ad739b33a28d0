package server

import (
	"archive/tar"
	"compress/gzip"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/internal/api/common"
	"github.com/talosbox/talosbox/internal/k8s/secrets"
)

// Kubeconfig hands out an admin kubeconfig for the cluster (admins only,
// control planes only): a fresh client certificate with CN admin in
// system:masters, signed by the cluster CA, for the control-plane
// endpoint. As on Talos it streams a tar.gz holding one file, kubeconfig.
func (m *machineServer) Kubeconfig(_ *emptypb.Empty, srv grpc.ServerStreamingServer[common.Data]) error {
	cfg := m.node.Config()
	if cfg == nil {
		return status.Error(codes.FailedPrecondition, "kubeconfig: the node has no config yet")
	}

	if !cfg.IsControlPlane() {
		return status.Error(codes.FailedPrecondition, "kubeconfig: the node is not a control plane node: ask a control plane")
	}

	in, err := secrets.FromConfig(cfg, "", "", nil)
	if err != nil {
		return status.Errorf(codes.Internal, "kubeconfig: %v", err)
	}

	var lifetime time.Duration
	if a := cfg.Cluster.AdminKubeconfig; a != nil {
		lifetime = a.CertLifetime
	}

	data, err := secrets.AdminKubeconfig(in, lifetime)
	if err != nil {
		return status.Errorf(codes.Internal, "kubeconfig: %v", err)
	}

	buf := &chunkBuffer{w: dataWriter{srv: srv}}
	zw := gzip.NewWriter(buf)
	tw := tar.NewWriter(zw)

	if err := tw.WriteHeader(&tar.Header{Name: "kubeconfig", Mode: 0o600, Size: int64(len(data)), ModTime: time.Now(), Typeflag: tar.TypeReg}); err != nil {
		return status.Errorf(codes.Internal, "kubeconfig: %v", err)
	}

	if _, err := tw.Write(data); err != nil {
		return err
	}

	if err := tw.Close(); err != nil {
		return err
	}

	if err := zw.Close(); err != nil {
		return err
	}

	return buf.Flush()
}
