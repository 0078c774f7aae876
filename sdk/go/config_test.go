package basaltic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envOf answers a lookup over vars only: the test's environment never leaks in.
func envOf(vars map[string]string) Option {
	return WithLookupEnv(func(name string) (string, bool) {
		value, ok := vars[name]
		return value, ok
	})
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewConfigDefaultsAndEnvironment(t *testing.T) {
	home := t.TempDir()
	cfg, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKey: "sqsgw_k"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != DefaultEndpoint || cfg.APIKey != "sqsgw_k" || cfg.Account != "" || cfg.Region != "" {
		t.Fatalf("defaults: %+v", cfg)
	}
	cfg, err = NewConfig(context.Background(), envOf(map[string]string{
		"HOME": home, EnvAPIKey: "sqsgw_k", EnvEndpoint: "https://gw.example:8443/basaltic",
		EnvAccount: "acme", EnvRegion: "eu-south-2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != "https://gw.example:8443/basaltic" || cfg.Account != "acme" || cfg.Region != "eu-south-2" {
		t.Fatalf("from the environment: %+v", cfg)
	}
}

func TestNewConfigWithoutKeyIsAClearError(t *testing.T) {
	_, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": t.TempDir(), EnvAPIKey: ""}))
	if !errors.Is(err, ErrNoAPIKey) {
		t.Fatalf("want ErrNoAPIKey, got %v", err)
	}
	for _, want := range []string{EnvAPIKey, EnvAPIKeyFile, "api_key", "config.toml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %s", err, want)
		}
	}
}

func TestNewConfigKeyFile(t *testing.T) {
	home := t.TempDir()
	path := writeFile(t, "key", "  sqsgw_from_file  \nsecond line\n")
	cfg, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKeyFile: path, EnvAPIKey: "sqsgw_env"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIKey != "sqsgw_from_file" {
		t.Fatalf("the key file's first line beats BASALTIC_API_KEY (as --api-key-file does): %q", cfg.APIKey)
	}
	empty := writeFile(t, "empty", "\nsqsgw_second\n")
	if _, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKeyFile: empty})); err == nil || !strings.Contains(err.Error(), "first line is empty") {
		t.Fatalf("an empty first line: %v", err)
	}
	if _, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKeyFile: filepath.Join(home, "missing")})); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing key file: %v", err)
	}
}

func TestNewConfigFile(t *testing.T) {
	home := t.TempDir()
	text := "# basaltic CLI config\n" +
		"endpoint = \"http://127.0.0.1:9999\"   # a comment\n" +
		"api_key = 'sqsgw_literal\\n'\n" +
		"account = \"acme \\u00e9\\\"x\\\"\"\n" +
		"timeout = 5\n" +
		"tags = [\"a\", \"b]\"]\n" +
		"\"region\" = \"eu-south-2\"\n" +
		"profile.name = \"ignored\"\n" +
		"\n[other]\nendpoint = \"http://not-top-level\"\n"
	path := writeFile(t, "config.toml", text)
	cfg, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvConfigFile: path}))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Endpoint: "http://127.0.0.1:9999", APIKey: `sqsgw_literal\n`, Account: "acme é\"x\"", Region: "eu-south-2"}
	if cfg.Endpoint != want.Endpoint || cfg.APIKey != want.APIKey || cfg.Account != want.Account || cfg.Region != want.Region {
		t.Fatalf("got %q %q %q %q", cfg.Endpoint, cfg.APIKey, cfg.Account, cfg.Region)
	}

	// The environment beats the file; options beat both.
	cfg, err = NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvConfigFile: path, EnvEndpoint: "http://10.0.0.1:8787", EnvAPIKey: "sqsgw_env"}),
		WithRegion("code-region"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != "http://10.0.0.1:8787" || cfg.APIKey != "sqsgw_env" || cfg.Account != "acme é\"x\"" || cfg.Region != "code-region" {
		t.Fatalf("precedence: %q %q %q %q", cfg.Endpoint, cfg.APIKey, cfg.Account, cfg.Region)
	}

	// The default file, ~/.basaltic/config.toml.
	if err := os.MkdirAll(filepath.Join(home, ".basaltic"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".basaltic", "config.toml"), []byte("api_key = \"sqsgw_home\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = NewConfig(context.Background(), envOf(map[string]string{"HOME": home}))
	if err != nil || cfg.APIKey != "sqsgw_home" {
		t.Fatalf("the default config file: %v %q", err, cfg.APIKey)
	}

	// A named file that does not exist is an error; the default one missing is not.
	if _, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKey: "k", EnvConfigFile: filepath.Join(home, "nope.toml")})); err == nil {
		t.Fatal("a named config file that does not exist was accepted")
	}
	if _, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": t.TempDir(), EnvAPIKey: "k"})); err != nil {
		t.Fatalf("no default config file: %v", err)
	}
}

func TestNewConfigFileNotReadWhenNotNeeded(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".basaltic"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".basaltic", "config.toml"), []byte("this is not toml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As the CLI: endpoint and key given, the default file is not read.
	if _, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKey: "k", EnvEndpoint: "http://127.0.0.1:1"})); err != nil {
		t.Fatalf("the default file was read though nothing was missing: %v", err)
	}
	// Needed, its error names the file and the line.
	_, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": home, EnvAPIKey: "k"}))
	if err == nil || !strings.Contains(err.Error(), "config.toml") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("a broken config file: %v", err)
	}
}

func TestParseConfigRefusesWhatItCannotRead(t *testing.T) {
	for _, text := range []string{
		"api_key = \"\"\"\nmulti\n\"\"\"\n",
		"api_key = \"unterminated\n",
		"api_key = \"a\"\napi_key = \"b\"\n",
		"list = [\n 1,\n]\n",
		"api_key = \"a\" trailing\n",
		"just words\n",
		"api_key =\n",
		"api_key = \"bad \\q escape\"\n",
	} {
		if _, err := parseConfig(text); err == nil {
			t.Errorf("accepted %q", text)
		}
	}
}

func TestOptionsBeatTheEnvironment(t *testing.T) {
	cfg, err := NewConfig(context.Background(),
		envOf(map[string]string{"HOME": t.TempDir(), EnvAPIKey: "env", EnvEndpoint: "http://env:1", EnvAccount: "env"}),
		WithAPIKey("code"), WithEndpoint("http://code:2"), WithAccount("code"), WithTimeout(7), WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIKey != "code" || cfg.Endpoint != "http://code:2" || cfg.Account != "code" || cfg.Timeout != 7 || cfg.Retry.MaxAttempts != 1 {
		t.Fatalf("%+v", cfg)
	}
}

func TestNewConfigRefusesABadEndpoint(t *testing.T) {
	for _, endpoint := range []string{"127.0.0.1:8787", "ftp://host", "http://", "http://host/?a=b", "https://user:secret@"} {
		_, err := NewConfig(context.Background(), envOf(map[string]string{"HOME": t.TempDir(), EnvAPIKey: "k", EnvEndpoint: endpoint}))
		if err == nil {
			t.Errorf("accepted the endpoint %q", endpoint)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error repeats a password: %v", err)
		}
	}
}

func TestPrintingAConfigHidesTheKey(t *testing.T) {
	cfg := Config{Endpoint: "http://proxy-user:proxy-pass@127.0.0.1:8787", APIKey: "sqsgw_0123_secret"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, value := range []interface{}{cfg, &cfg} {
			out := fmt.Sprintf(format, value)
			if strings.Contains(out, "secret") || strings.Contains(out, "proxy-pass") {
				t.Errorf("%s printed a secret: %s", format, out)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@127.0.0.1:1/x?a=b@c": "http://127.0.0.1:1/x?a=b@c",
		"https://a@b@host":                   "https://host",
		"http://127.0.0.1:8787":              "http://127.0.0.1:8787",
		"not a url":                          "not a url",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRetryPolicyDefaults(t *testing.T) {
	if got := (RetryPolicy{}).WithDefaults(); got != DefaultRetryPolicy {
		t.Fatalf("%+v", got)
	}
	if got := (RetryPolicy{MaxAttempts: 1}).WithDefaults(); got.MaxAttempts != 1 || got.BaseDelay != DefaultRetryPolicy.BaseDelay {
		t.Fatalf("%+v", got)
	}
}
