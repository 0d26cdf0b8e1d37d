package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// exchange is api/contract's Exchange: a request and the API's response.
type exchange struct {
	Method         string      `json:"method"`
	URL            string      `json:"url"`
	Header         http.Header `json:"header,omitempty"`
	Body           []byte      `json:"body,omitempty"`
	Status         int         `json:"status"`
	ResponseHeader http.Header `json:"response_header,omitempty"`
	ResponseBody   []byte      `json:"response_body,omitempty"`
}

// contractResult is api/contract's Result: the request's own validation,
// how the response departs from openapi.yaml, or why it could not be
// checked at all.
type contractResult struct {
	RequestError string   `json:"request_error"`
	Errors       []string `json:"errors"`
	Fatal        string   `json:"fatal"`
}

// apicheck is api/contract's cmd/apicheck, started once for the package's
// tests (each fuzz worker starts its own), stopped by TestMain.
var apicheck struct {
	sync.Mutex
	started bool
	err     error
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopAPICheck()
	os.Exit(code)
}

// checkContract checks one exchange against openapi.yaml. A checker that
// cannot be built or started fails the test: the contract is never
// skipped.
func checkContract(tb testing.TB, e exchange) contractResult {
	tb.Helper()
	apicheck.Lock()
	defer apicheck.Unlock()
	if !apicheck.started {
		apicheck.started = true
		apicheck.err = startAPICheck()
	}
	if apicheck.err != nil {
		tb.Fatalf("the contract checker (api/contract): %v", apicheck.err)
	}
	r, err := roundTrip(e)
	if err != nil {
		apicheck.err = err
		tb.Fatalf("the contract checker (api/contract): %v", err)
	}
	return r
}

// startAPICheck starts cmd/apicheck in its module with go run, which
// builds it and keeps the binary in the build cache (a link of a second
// saved each run while the module is unchanged; a build error goes to the
// test's output), then proves that it checks: a verdict with an action
// openapi.yaml does not have must come back as an error, so that a checker
// that passes everything cannot pass for the contract.
func startAPICheck() error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("no go tool on PATH to build it: %w", err)
	}
	cmd := exec.Command(goTool, "run", "./cmd/apicheck")
	cmd.Dir = "contract"
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	apicheck.cmd, apicheck.in, apicheck.out = cmd, in, bufio.NewReaderSize(out, 1<<16)
	r, err := roundTrip(exchange{
		Method: http.MethodPost, URL: "/v1/check", Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(`{"flow":"login","account":"a","ip":"192.0.2.1"}`),
		Status: http.StatusOK, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
		ResponseBody: []byte(`{"action":"wave-through","delay_ms":0,"retry_after":0,"reasons":[]}`),
	})
	switch {
	case err != nil:
		return err
	case r.Fatal != "":
		return fmt.Errorf("its own check: %s", r.Fatal)
	case len(r.Errors) == 0:
		return fmt.Errorf("it passes a verdict openapi.yaml does not describe (action wave-through)")
	}
	return nil
}

func roundTrip(e exchange) (contractResult, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return contractResult{}, err
	}
	if _, err := apicheck.in.Write(append(b, '\n')); err != nil {
		return contractResult{}, fmt.Errorf("writing to apicheck: %w", err)
	}
	line, err := apicheck.out.ReadBytes('\n')
	if err != nil {
		return contractResult{}, fmt.Errorf("reading from apicheck: %w", err)
	}
	var r contractResult
	if err := json.Unmarshal(line, &r); err != nil {
		return contractResult{}, fmt.Errorf("apicheck answered %q: %w", line, err)
	}
	return r, nil
}

func stopAPICheck() {
	apicheck.Lock()
	defer apicheck.Unlock()
	if apicheck.cmd != nil {
		apicheck.in.Close() // apicheck exits at the end of its input, and go run with it
		apicheck.cmd.Wait()
	}
}
