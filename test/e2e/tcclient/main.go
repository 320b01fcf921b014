// Command tcclient does, inside a sandbox of `stockade run --containers`,
// what a Testcontainers library does for an integration test: it finds the
// engine through DOCKER_HOST, creates a container from an image with a port
// published on a random host port, starts it, reads the port the engine
// chose from the container's inspection, waits until the port answers,
// reads what the service says, and removes the container.
//
// It speaks the Docker Engine API over the unix socket with the standard
// library only (static, CGO_ENABLED=0), and prints one line: "OK <port>
// <what the service said>", or "FAIL <step>: <error>" and exits 1.
//
//	tcclient IMAGE
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// api is the Docker API version the requests name, one every podman
// release since 3 serves.
const api = "/v1.41"

// servicePort is the port the container's service listens on.
const servicePort = "8080/tcp"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tcclient IMAGE")
		os.Exit(2)
	}
	port, said, err := run(os.Args[1])
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	fmt.Println("OK", port, said)
}

func run(image string) (string, string, error) {
	sock, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://")
	if !ok {
		return "", "", fmt.Errorf("DOCKER_HOST: %q is not a unix socket", os.Getenv("DOCKER_HOST"))
	}
	c := &client{http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}}
	if err := c.do("GET", "/_ping", nil, nil, http.StatusOK); err != nil {
		return "", "", fmt.Errorf("ping: %w", err)
	}
	var created struct{ Id string }
	err := c.do("POST", "/containers/create", map[string]any{
		"Image":        image,
		"Cmd":          []string{"sh", "-c", "while :; do echo hello-from-the-container | nc -l -p 8080; done"},
		"ExposedPorts": map[string]any{servicePort: map[string]any{}},
		"HostConfig": map[string]any{
			// HostPort "": the engine picks a free port, as
			// Testcontainers asks.
			"PortBindings": map[string]any{servicePort: []map[string]string{{"HostIp": "", "HostPort": ""}}},
		},
	}, &created, http.StatusCreated)
	if err != nil {
		return "", "", fmt.Errorf("create: %w", err)
	}
	defer c.do("DELETE", "/containers/"+created.Id+"?force=true", nil, nil, http.StatusNoContent)
	if err := c.do("POST", "/containers/"+created.Id+"/start", nil, nil, http.StatusNoContent); err != nil {
		return "", "", fmt.Errorf("start: %w", err)
	}
	var inspect struct {
		NetworkSettings struct {
			Ports map[string][]struct{ HostIp, HostPort string }
		}
	}
	if err := c.do("GET", "/containers/"+created.Id+"/json", nil, &inspect, http.StatusOK); err != nil {
		return "", "", fmt.Errorf("inspect: %w", err)
	}
	b := inspect.NetworkSettings.Ports[servicePort]
	if len(b) == 0 || b[0].HostPort == "" {
		return "", "", fmt.Errorf("inspect: no host port for %s: %+v", servicePort, inspect.NetworkSettings.Ports)
	}
	port := b[0].HostPort
	// The wait strategy: the port answers with a line once the service
	// listens (before, the engine's forwarder accepts and closes).
	deadline := time.Now().Add(30 * time.Second)
	for {
		said, err := readLine(net.JoinHostPort("127.0.0.1", port))
		if err == nil {
			return port, said, nil
		}
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("connect to 127.0.0.1:%s: %w", port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readLine(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

type client struct{ http.Client }

func (c *client) do(method, path string, in, out any, want int) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://docker"+api+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
