package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestRunRefusesBadInvocations(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"-scenario", "concert"}, "unknown scenario"},
		{"remote target", []string{"-base", "http://192.0.2.10:8080", "-admin-token", "x"}, "not a loopback"},
		{"bad pay mix", []string{"-pay-mix", "visa=1"}, "unknown method"},
		{"too many fans", []string{"-fans", "2000000"}, "fans must lie"},
		{"bad group", []string{"-group-min", "4", "-group-max", "2"}, "group sizes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

func TestCheckTarget(t *testing.T) {
	for _, ok := range []string{"http://localhost:8080", "http://127.0.0.1:1", "http://[::1]:8080"} {
		if err := checkTarget(ok, false); err != nil {
			t.Errorf("checkTarget(%s): %v", ok, err)
		}
	}
	if err := checkTarget("http://192.0.2.1", false); err == nil {
		t.Errorf("checkTarget accepted a remote target")
	}
	if err := checkTarget("http://192.0.2.1", true); err != nil {
		t.Errorf("checkTarget with -allow-remote: %v", err)
	}
}
