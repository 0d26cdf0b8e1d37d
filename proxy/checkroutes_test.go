package proxy_test

import (
	"errors"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/proxy"
)

func TestCheckRoutes_NamesTheMistake(t *testing.T) {
	policy := config.DefaultPolicy()
	with := func(f func(*proxy.Route)) []proxy.Route {
		rt := formRoute()
		f(&rt)
		return []proxy.Route{rt}
	}
	tests := []struct {
		name, field, says string
		routes            []proxy.Route
	}{
		{"a bad name", "Name", "lower-case", with(func(r *proxy.Route) { r.Name = "Login!" })},
		{"two of one name", "Name", "two routes", append(with(func(*proxy.Route) {}), formRoute())},
		{"an unknown flow", "Flow", `"logn" is not a flow`, with(func(r *proxy.Route) { r.Flow = "logn" })},
		{"a relative path", "Path", "start with /", with(func(r *proxy.Route) { r.Path = "login" })},
		{"a path with a query", "Path", "without query", with(func(r *proxy.Route) { r.Path = "/login?x" })},
		{"a bad method", "Methods[0]", "not an HTTP method", with(func(r *proxy.Route) { r.Methods = []string{"PO ST"} })},
		{"no account", "Account", "required", with(func(r *proxy.Route) { r.Account = "" })},
		{"a bad pointer", "Account", "starts with", with(func(r *proxy.Route) { r.Body = proxy.JSON; r.Account = "user" })},
		{"a destination on login", "Destination", "verifies no", with(func(r *proxy.Route) { r.Destination = "phone"; r.Channel = "sms" })},
		{"a bad channel", "Channel", "not a channel", with(func(r *proxy.Route) { r.Channel = "fax" })},
		{"a send without destination", "Destination", "required", with(func(r *proxy.Route) { r.Flow = "otp_send"; r.Success, r.Failure = nil, nil })},
		{"a send that classifies", "Success", "no report", with(func(r *proxy.Route) {
			r.Flow, r.Destination, r.Channel, r.Password = "otp_send", "phone", "sms", ""
		})},
		{"a body bound too large", "MaxBodyBytes", "64 MiB", with(func(r *proxy.Route) { r.MaxBodyBytes = 1 << 30 })},
		{"an empty match", "Success[0].", "says nothing", with(func(r *proxy.Route) { r.Success = []proxy.Match{{}} })},
		{"a bad status", "Failure[0].Status", "100 to 599", with(func(r *proxy.Route) { r.Failure = []proxy.Match{{Status: []int{42}}} })},
		{"a header value without header", "Success[0].HeaderValue", "needs header", with(func(r *proxy.Route) {
			r.Success = []proxy.Match{{HeaderValue: regexp.MustCompile(`x`)}}
		})},
		{"a json value that is not JSON", "Success[0].JSONValue", "not one JSON value", with(func(r *proxy.Route) {
			r.Success = []proxy.Match{{JSON: "/ok", JSONValue: "yes"}}
		})},
		{"a step-up page on a JSON route", "StepUpPage", "problem document", with(func(r *proxy.Route) {
			*r = jsonRoute()
			r.StepUpPage = template.Must(template.New("").Parse("x"))
		})},
		{"a step-up page on a send flow", "StepUpPage", "no report", with(func(r *proxy.Route) {
			*r = otpRoutes()[0]
			r.StepUpLogout = "/logout"
		})},
		{"a logout with a query", "StepUpLogout", "without query", with(func(r *proxy.Route) { r.StepUpLogout = "/logout?next=/" })},
		{"a reason no step-up gives", "StepUpPass[0]", "not a step-up reason", with(func(r *proxy.Route) {
			r.StepUpPass = []authguard.Reason{"ip_spray"}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := proxy.CheckRoutes(tt.routes, policy)
			var re *proxy.RouteError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *RouteError", err)
			}
			if !strings.HasPrefix(re.Field, tt.field) || !strings.Contains(re.Error(), tt.says) {
				t.Errorf("err = %v (field %q), want field %s saying %q", err, re.Field, tt.field, tt.says)
			}
		})
	}
	if err := proxy.CheckRoutes(append([]proxy.Route{formRoute(), jsonRoute()}, otpRoutes()...), policy); err != nil {
		t.Errorf("the tests' routes: %v", err)
	}
}
