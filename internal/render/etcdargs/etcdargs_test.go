package etcdargs

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/pkg/v3/featuregate"
	"go.etcd.io/etcd/server/v3/features"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/etcd"
)

// agree says whether Flag and the member (internal/etcd.ValidateExtraArgs,
// which applies the flag to an embed.Config) answer key=value alike: both
// read it with configs.ParseEtcdArg, and the member must then take what
// it read.
func agree(t *testing.T, key, value string) {
	t.Helper()

	_, mine := Flag(key, value)
	theirs := etcd.ValidateExtraArgs(configs.ArgsOf(map[string]string{key: value}))

	if (mine == nil) != (theirs == nil) {
		t.Errorf("%q=%q: Flag says %v, the member %v", key, value, mine, theirs)

		return
	}

	for _, e := range []error{etcd.ErrArgOwned, etcd.ErrArgUnknown} {
		if errors.Is(mine, e) != errors.Is(theirs, e) {
			t.Errorf("%q=%q: Flag says %v, the member %v", key, value, mine, theirs)
		}
	}
}

// TestFlagsAgreeWithTheMember: every flag this package knows, and some it
// does not, against values of every kind.
func TestFlagsAgreeWithTheMember(t *testing.T) {
	keys := slices.Concat(configs.EtcdOwnedArgs, slices.Collect(maps.Keys(configs.EtcdArgs)), slices.Collect(maps.Keys(configs.EtcdExperimentalRenames)),
		slices.Collect(maps.Keys(configs.EtcdExperimentalGates)), []string{"no-such-flag", "--snapshot-count", "-name", "", "experimental-unknown", "Snapshot-Count"})

	values := []string{
		"", "0", "1", "-1", " 1", "1.5", "18446744073709551615", "18446744073709551616", "4294967295", "4294967296",
		"9223372036854775807", "9223372036854775808", "5s", "-5s", "1h2m", "x", "true", "false", "TRUE", "t", "2",
		"TLS1.2", "TLS1.3", "periodic", "revision", "map", "array", "basic", "extensive", "debug", "json", "console",
		"http://0.0.0.0:2381", "https://[::1]:2381", "http://h", "ftp://x:1", "http://a:1,https://b:2", ",", "a,b",
		"InitialCorruptCheck=true", "AllAlpha=true,AllBeta=false", "Unknown=true", "LeaseCheckpoint=maybe", "LeaseCheckpoint",
		" LeaseCheckpoint = true ", "=true",
	}

	for _, k := range keys {
		for _, v := range values {
			agree(t, k, v)
		}
	}
}

// FuzzFlagsAgreeWithTheMember looks for a key or value the two answer
// differently.
func FuzzFlagsAgreeWithTheMember(f *testing.F) {
	for k := range configs.EtcdArgs {
		f.Add(k, "1")
	}

	f.Add("feature-gates", "AllAlpha=true,LeaseCheckpoint=false")
	f.Add("listen-metrics-urls", "http://0.0.0.0:2381")
	f.Add("experimental-initial-corrupt-check", "true")

	f.Fuzz(func(t *testing.T, key, value string) { agree(t, key, value) })
}

// TestAlphaGatesAreTheServers: AllAlpha sets the etcd server's alpha
// gates, which are off by default.
func TestAlphaGatesAreTheServers(t *testing.T) {
	var alpha []string

	for g, spec := range features.DefaultEtcdServerFeatureGates {
		if spec.PreRelease == featuregate.Alpha {
			alpha = append(alpha, string(g))

			if spec.Default {
				t.Errorf("%s is an alpha gate on by default: Validate takes alpha gates as off", g)
			}
		}
	}

	slices.Sort(alpha)

	var got []string

	for g, spec := range configs.EtcdFeatureGates {
		if spec.Alpha && g != "AllAlpha" {
			got = append(got, g)
		}
	}

	if slices.Sort(got); !slices.Equal(got, alpha) {
		t.Errorf("configs' alpha gates %q, the server's %q: run make generate", got, alpha)
	}
}

// TestValidate: the rules the member checks when it starts, on what
// extraArgs set.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args map[string]string
		want string // a part of the one problem, or "" for none
	}{
		{nil, ""},
		{map[string]string{"heartbeat-interval": "200", "election-timeout": "1000"}, ""},
		{map[string]string{"heartbeat-interval": "201"}, "at least as 5 times"},
		{map[string]string{"heartbeat-interval": "0"}, "--heartbeat-interval must be >0"},
		{map[string]string{"election-timeout": "0"}, "--election-timeout must be >0"},
		{map[string]string{"election-timeout": "50001"}, "is too long"},
		{map[string]string{"heartbeat-interval": "18446744073709551615", "election-timeout": "18446744073709551615"}, "at least as 5 times"},
		{map[string]string{"compact-hash-check-time": "0s"}, "--compact-hash-check-time must be >0"},
		{map[string]string{"experimental-compact-hash-check-time": "-1m"}, "--compact-hash-check-time must be >0"},
		{map[string]string{"feature-gates": "LeaseCheckpointPersist=true"}, "requires enabling feature gate LeaseCheckpoint"},
		{map[string]string{"feature-gates": "LeaseCheckpointPersist=true", "experimental-enable-lease-checkpoint": "true"}, ""},
		{map[string]string{"feature-gates": "AllAlpha=true"}, ""},
		{map[string]string{"feature-gates": "AllAlpha=true,LeaseCheckpoint=false"}, "requires enabling"},
		{map[string]string{"tls-min-version": "TLS1.3", "tls-max-version": "TLS1.2"}, "is greater than max version"},
		{map[string]string{"tls-min-version": "TLS1.3", "cipher-suites": "TLS_AES_128_GCM_SHA256"}, "only TLS1.3"},
		{map[string]string{"cipher-suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"}, ""},
		{map[string]string{"cipher-suites": "TLS_NOPE"}, `unexpected TLS cipher suite "TLS_NOPE"`},
		{map[string]string{"listen-metrics-urls": "http://0.0.0.0:2381,http://localhost:2382,https://[::1]:2383"}, ""},
		{map[string]string{"listen-metrics-urls": "http://metrics.example:2381"}, "expected IP in URL for binding"},
	} {
		s, errs := Apply(configs.ArgsOf(tc.args))
		if len(errs) > 0 {
			t.Fatalf("%v: %v", tc.args, errs)
		}

		got := s.Validate()

		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%v: %v", tc.args, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0].Error(), tc.want)):
			t.Errorf("%v: %v, want one problem with %q", tc.args, got, tc.want)
		}
	}
}
