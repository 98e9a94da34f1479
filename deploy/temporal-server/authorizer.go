package main

import (
	"context"

	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
)

// workerAPIs are the WorkflowService methods only a worker calls: taking tasks from a task queue
// and answering them (workflow, activity, query and Nexus tasks), heartbeating activities, and a
// worker's own bookkeeping. Temporal's default authorizer marks them AccessWrite like
// StartWorkflowExecution, so whoever may start a run could also poll the deployment's task queues
// and act as its worker (go.temporal.io/server common/api/metadata.go at v1.29.7).
var workerAPIs = map[string]bool{
	"PollWorkflowTaskQueue":            true,
	"RespondWorkflowTaskCompleted":     true,
	"RespondWorkflowTaskFailed":        true,
	"RespondQueryTaskCompleted":        true,
	"PollActivityTaskQueue":            true,
	"RecordActivityTaskHeartbeat":      true,
	"RecordActivityTaskHeartbeatById":  true,
	"RespondActivityTaskCompleted":     true,
	"RespondActivityTaskCompletedById": true,
	"RespondActivityTaskFailed":        true,
	"RespondActivityTaskFailedById":    true,
	"RespondActivityTaskCanceled":      true,
	"RespondActivityTaskCanceledById":  true,
	"PollNexusTaskQueue":               true,
	"RespondNexusTaskCompleted":        true,
	"RespondNexusTaskFailed":           true,
	"ResetStickyTaskQueue":             true,
	"ShutdownWorker":                   true,
	"RecordWorkerHeartbeat":            true,
}

// IsWorkerAPI reports whether the full gRPC method name is one of the workerAPIs.
func IsWorkerAPI(fullAPIName string) bool {
	return api.ServiceName(fullAPIName) == api.WorkflowServicePrefix && workerAPIs[api.MethodName(fullAPIName)]
}

// workerAuthorizer keeps the worker APIs to worker identities: a call to one of them needs the
// worker role (JWT permission `<namespace>:worker`, or `system:worker`) or the system admin role,
// on top of what the wrapped authorizer asks (the default one: writer for these APIs). Every other
// call is the wrapped authorizer's alone.
type workerAuthorizer struct {
	next authorization.Authorizer
}

// NewWorkerAuthorizer wraps next (normally authorization.NewDefaultAuthorizer()).
func NewWorkerAuthorizer(next authorization.Authorizer) authorization.Authorizer {
	return &workerAuthorizer{next: next}
}

const workerRoleReason = "this API is for workers: the caller needs the worker role for the namespace"

func (a *workerAuthorizer) Authorize(ctx context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if IsWorkerAPI(target.APIName) && !isWorker(claims, target.Namespace) {
		return authorization.Result{Decision: authorization.DecisionDeny, Reason: workerRoleReason}, nil
	}
	return a.next.Authorize(ctx, claims, target)
}

// isWorker: the claims hold the worker role for namespace (or system-wide), or are system admin.
// Roles are bit flags (common/authorization/roles.go), so each is tested on its own bit, never
// compared with >= as the default authorizer does.
func isWorker(claims *authorization.Claims, namespace string) bool {
	if claims == nil {
		return false
	}
	if claims.System&authorization.RoleAdmin != 0 || claims.System&authorization.RoleWorker != 0 {
		return true
	}
	return namespace != "" && claims.Namespaces[namespace]&authorization.RoleWorker != 0
}
