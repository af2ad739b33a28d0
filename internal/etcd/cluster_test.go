package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/talosbox/talosbox/internal/pki"
)

// TestClusterLifecycle walks one three-member cluster through the life
// machined gives it: bootstrap, two joins as learners and their promotion,
// leadership hand-over, a reset node rejoining under its old name, a graceful
// leave, a removal by another member, and the last member refusing to leave.
func TestClusterLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	ca := newTestCA(t)

	// Steps share the members, so they run on t itself rather than as
	// subtests, whose cleanups would stop the members after each step.
	step := func(name string, f func(t *testing.T)) {
		start := time.Now()

		f(t)
		t.Logf("%s: done in %v", name, time.Since(start).Round(time.Millisecond))
	}

	var (
		m      [3]*Server
		o      [3]Options
		names  = []string{"cp-1", "cp-2", "cp-3"}
		client = func(i int) []string { return o[i].AdvertiseClientURLs }
	)

	step("bootstrap", func(t *testing.T) {
		m[0], o[0] = startMember(t, ctx, testOptions(t, ca, names[0]), Bootstrap)

		if err := m[0].WaitVoter(ctx); err != nil {
			t.Fatal(err)
		}
	})

	step("join as learners, promoted to voters", func(t *testing.T) {
		for i := 1; i < 3; i++ {
			oi := testOptions(t, ca, names[i])
			oi.JoinEndpoints = func() []string { return slices.Concat(client(0), client(1)) }

			m[i], o[i] = startMember(t, ctx, oi, Join)

			if err := m[i].WaitVoter(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})

	step("members", func(t *testing.T) {
		for _, s := range m {
			ms, err := s.Members(ctx)
			if err != nil {
				t.Fatal(err)
			}

			if len(ms) != 3 {
				t.Fatalf("want 3 members, got %s", memberNames(ms))
			}

			for i, name := range names {
				j := slices.IndexFunc(ms, func(mm Member) bool { return mm.Name == name })
				if j < 0 {
					t.Fatalf("no member %s in %s", name, memberNames(ms))
				}

				got := ms[j]
				if got.IsLearner || got.ID != m[i].MemberID() ||
					!slices.Equal(got.PeerURLs, o[i].AdvertisePeerURLs) || !slices.Equal(got.ClientURLs, o[i].AdvertiseClientURLs) {
					t.Fatalf("member %s: got %+v", name, got)
				}
			}
		}
	})

	step("a write through a joiner is read on the first member", func(t *testing.T) {
		if _, err := m[2].Client().Put(ctx, "/talosbox/test", "from cp-3"); err != nil {
			t.Fatal(err)
		}

		resp, err := m[0].Client().Get(ctx, "/talosbox/test") // linearizable
		if err != nil {
			t.Fatal(err)
		}

		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "from cp-3" {
			t.Fatalf("got %v", resp.Kvs)
		}
	})

	step("status and health", func(t *testing.T) {
		var leader uint64

		for _, s := range m {
			if err := s.Healthy(ctx); err != nil {
				t.Fatal(err)
			}

			st, err := s.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}

			if st.MemberID != s.MemberID() || st.Leader == 0 || st.IsLearner || st.DBSize == 0 || st.RaftIndex == 0 {
				t.Fatalf("status of %s: %+v", s.Name(), st)
			}

			if leader != 0 && st.Leader != leader {
				t.Logf("leaders differ (an election in between): %x, %x", leader, st.Leader)
			}

			leader = st.Leader
		}
	})

	step("client port requires a certificate from the etcd CA", func(t *testing.T) {
		addr := hostOf(t, o[0].AdvertiseClientURLs[0])

		good, err := ClientTLSConfig(o[1].PKIDir)
		if err != nil {
			t.Fatal(err)
		}

		if err := handshake(addr, good); err != nil {
			t.Fatalf("with the admin certificate: %v", err)
		}

		noCert := &tls.Config{RootCAs: good.RootCAs, MinVersion: tls.VersionTLS12}
		if err := handshake(addr, noCert); err == nil {
			t.Fatal("a client without a certificate was accepted")
		} else {
			t.Logf("without a certificate: %v", err)
		}

		other, err := pki.NewClientCertificate(newTestCA(t), pki.ClientOptions{KeyType: pki.ECDSAP256})
		if err != nil {
			t.Fatal(err)
		}

		pair, err := other.TLSCertificate()
		if err != nil {
			t.Fatal(err)
		}

		foreign := &tls.Config{RootCAs: good.RootCAs, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		if err := handshake(addr, foreign); err == nil {
			t.Fatal("a client certificate from another CA was accepted")
		}

		// And a real client with the admin certificate gets answers.
		cli, err := clientv3.New(clientv3.Config{Endpoints: o[0].AdvertiseClientURLs, TLS: good, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}

		defer cli.Close() //nolint:errcheck

		if _, err := cli.Get(ctx, "/talosbox/test"); err != nil {
			t.Fatal(err)
		}
	})

	step("forfeit leadership", func(t *testing.T) {
		// Followers answer "" and the leader hands over; the leader may
		// change under us, so ask everyone until one hands over.
		var from *Server

		eventually(t, 20*time.Second, "leadership handed over", func() error {
			for _, s := range m {
				to, err := s.ForfeitLeadership(ctx)
				if err != nil {
					return err
				}

				if to == s.Name() {
					return fmt.Errorf("%s forfeited to itself", to)
				}

				if to != "" {
					from = s

					return nil
				}
			}

			return errors.New("no member was the leader")
		})

		eventually(t, 10*time.Second, "the old leader follows", func() error {
			st, err := from.Status(ctx)
			if err != nil {
				return err
			}

			if st.Leader == 0 || st.Leader == from.MemberID() {
				return fmt.Errorf("leader is %x", st.Leader)
			}

			return nil
		})
	})

	step("a reset node rejoins under its old name", func(t *testing.T) {
		oldID := m[2].MemberID()

		m[2].Close()

		if err := wipeDir(o[2].DataDir); err != nil {
			t.Fatal(err)
		}

		o[2].JoinEndpoints = func() []string { return slices.Concat(client(0), client(1)) }
		m[2], o[2] = startMember(t, ctx, o[2], Join)

		if err := m[2].WaitVoter(ctx); err != nil {
			t.Fatal(err)
		}

		ms, err := m[0].Members(ctx)
		if err != nil {
			t.Fatal(err)
		}

		if len(ms) != 3 || slices.ContainsFunc(ms, func(mm Member) bool { return mm.ID == oldID || mm.IsLearner }) {
			t.Fatalf("old member %x not replaced: %s", oldID, memberNames(ms))
		}
	})

	step("leave shrinks the cluster and wipes the data dir", func(t *testing.T) {
		if err := m[2].Leave(ctx); err != nil {
			t.Fatal(err)
		}

		select {
		case <-m[2].Done():
		default:
			t.Fatal("member still running after leave")
		}

		if empty, err := dirEmpty(o[2].DataDir); err != nil || !empty {
			t.Fatalf("data dir not wiped: empty=%t %v", empty, err)
		}

		eventually(t, 10*time.Second, "two members left", func() error {
			ms, err := m[0].Members(ctx)
			if err != nil {
				return err
			}

			if len(ms) != 2 || slices.ContainsFunc(ms, func(mm Member) bool { return mm.Name == names[2] }) {
				return fmt.Errorf("members: %s", memberNames(ms))
			}

			return nil
		})
	})

	step("a member removed by another stops with ErrRemoved", func(t *testing.T) {
		if err := m[0].RemoveMember(ctx, m[0].MemberID()); err == nil {
			t.Fatal("RemoveMember accepted this member's own ID")
		}

		removeCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()

		// The cluster may refuse while cp-1 has not yet seen cp-2 active.
		eventually(t, 20*time.Second, "cp-2 removed", func() error {
			return m[0].RemoveMember(removeCtx, m[1].MemberID())
		})

		// etcd runs on for a second after applying its removal. Health
		// checks in that second once hit etcd's IsLearner, which panics
		// when it cannot find the local member: on a node, machined's.
		sawRemoved := false

	poll:
		for {
			hctx, hcancel := context.WithTimeout(ctx, time.Second)
			err := m[1].Healthy(hctx)
			_, serr := m[1].Status(hctx)

			hcancel()

			sawRemoved = sawRemoved || (err != nil && strings.Contains(err.Error(), "removed from the cluster") &&
				serr != nil && strings.Contains(serr.Error(), "removed from the cluster"))

			select {
			case <-m[1].Done():
				break poll
			case <-ctx.Done():
				t.Fatal("removed member still running")
			case <-time.After(10 * time.Millisecond): // polling interval
			}
		}

		if !sawRemoved {
			t.Error("no health check saw the removal before the member stopped")
		}

		if !errors.Is(m[1].Err(), ErrRemoved) {
			t.Fatalf("Err() = %v, want ErrRemoved", m[1].Err())
		}
	})

	step("the last member refuses to leave", func(t *testing.T) {
		err := m[0].Leave(ctx)
		if !errors.Is(err, ErrLastMember) || !strings.Contains(err.Error(), "--graceful=false") {
			t.Fatalf("got %v, want ErrLastMember", err)
		}

		if err := m[0].Healthy(ctx); err != nil {
			t.Fatalf("the refused leave hurt the member: %v", err)
		}
	})
}

func hostOf(t *testing.T, rawURL string) string {
	t.Helper()

	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}

	return u.Host
}

// handshake completes a TLS connection and reads from it: with TLS 1.3 the
// server checks the client's certificate after the client's side of the
// handshake is done, so a refusal only shows on the first read.
func handshake(addr string, cfg *tls.Config) error {
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}

	defer conn.Close() //nolint:errcheck

	// An accepted client hears etcd's HTTP/2 settings frame first.
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))

	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}

	_, err = conn.Read(make([]byte, 1))

	return err
}
