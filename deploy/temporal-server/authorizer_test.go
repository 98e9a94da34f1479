package main

import (
	"context"
	"testing"

	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/config"
)

func TestWorkerAPIsNeedTheWorkerRole(t *testing.T) {
	a := NewWorkerAuthorizer(authorization.NewDefaultAuthorizer())
	ns := func(r authorization.Role) *authorization.Claims {
		return &authorization.Claims{Namespaces: map[string]authorization.Role{"default": r}}
	}
	sys := func(r authorization.Role) *authorization.Claims { return &authorization.Claims{System: r} }
	cases := []struct {
		name   string
		claims *authorization.Claims
		api    string
		ns     string
		allow  bool
	}{
		{"writer polls", ns(authorization.RoleWriter), "PollWorkflowTaskQueue", "default", false},
		{"writer polls activities", ns(authorization.RoleWriter), "PollActivityTaskQueue", "default", false},
		{"writer completes an activity by id", ns(authorization.RoleWriter), "RespondActivityTaskCompletedById", "default", false},
		{"namespace admin polls", ns(authorization.RoleAdmin), "PollWorkflowTaskQueue", "default", false},
		{"system writer polls", sys(authorization.RoleWriter), "PollWorkflowTaskQueue", "default", false},
		{"worker of another namespace", &authorization.Claims{Namespaces: map[string]authorization.Role{"other": authorization.RoleWorker | authorization.RoleWriter}}, "PollWorkflowTaskQueue", "default", false},
		{"no claims", nil, "PollWorkflowTaskQueue", "default", false},
		{"worker and writer polls", ns(authorization.RoleWorker | authorization.RoleWriter), "PollWorkflowTaskQueue", "default", true},
		{"worker and writer answers a query", ns(authorization.RoleWorker | authorization.RoleWriter), "RespondQueryTaskCompleted", "default", true},
		// The worker role alone is not enough: the default authorizer still asks for writer.
		{"worker alone polls", ns(authorization.RoleWorker), "PollWorkflowTaskQueue", "default", false},
		{"system worker and writer polls", sys(authorization.RoleWorker | authorization.RoleWriter), "PollWorkflowTaskQueue", "default", true},
		{"system admin polls", sys(authorization.RoleAdmin), "PollWorkflowTaskQueue", "default", true},
		{"writer starts a workflow", ns(authorization.RoleWriter), "StartWorkflowExecution", "default", true},
		{"writer signals", ns(authorization.RoleWriter), "SignalWorkflowExecution", "default", true},
		{"reader lists", ns(authorization.RoleReader), "ListWorkflowExecutions", "default", true},
		{"reader starts", ns(authorization.RoleReader), "StartWorkflowExecution", "default", false},
	}
	for _, c := range cases {
		r, err := a.Authorize(context.Background(), c.claims, &authorization.CallTarget{APIName: api.WorkflowServicePrefix + c.api, Namespace: c.ns})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := r.Decision == authorization.DecisionAllow; got != c.allow {
			t.Errorf("%s: allowed %v, want %v", c.name, got, c.allow)
		}
	}
}

// Every API in the list exists in the server's metadata, as a namespace-scoped write.
func TestWorkerAPIsAreKnownWrites(t *testing.T) {
	for name := range workerAPIs {
		m := api.GetMethodMetadata(api.WorkflowServicePrefix + name)
		if m.Scope != api.ScopeNamespace || m.Access != api.AccessWrite {
			t.Errorf("%s: scope %v access %v, want a namespace-scoped write", name, m.Scope, m.Access)
		}
	}
}

func TestAuthorizerSelection(t *testing.T) {
	for name, want := range map[string]bool{"loopwright": true, " Loopwright ": true, "default": false} {
		a, err := authorizerFromConfig(&config.Authorization{Authorizer: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := a.(*workerAuthorizer); ok != want {
			t.Errorf("%q: worker authorizer %v, want %v", name, ok, want)
		}
	}
}
