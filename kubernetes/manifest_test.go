// Package kubernetes holds the manifests that run a sweep as a Kubernetes
// Indexed Job; its test decodes them strictly into the official API types.
package kubernetes

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// decode reads a manifest strictly: an unknown or misspelt field anywhere
// (a typo Kubernetes would silently drop, or reject) fails the test.
func decode(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s does not decode strictly into %T: %v", path, into, err)
	}
}

func TestSweepJob(t *testing.T) {
	var job batchv1.Job
	decode(t, "sweep-job.yaml", &job)
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("apiVersion/kind %s/%s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("completionMode %v, want Indexed (each pod gets JOB_COMPLETION_INDEX)", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 2 {
		t.Fatalf("completions %v, parallelism %v: want equal, 2 or more", s.Completions, s.Parallelism)
	}
	n := *s.Completions
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyOnFailure && pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q: a Job needs OnFailure or Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !strings.Contains(c.Image, "lockjepsen/runner") {
		t.Errorf("image %q is not the runner image", c.Image)
	}
	args := c.Args
	if len(args) == 0 || args[0] != "sweep" {
		t.Fatalf("args %v: want lockjepsen sweep ...", args)
	}
	i := slices.Index(args, "--shard")
	if i < 0 || i+1 >= len(args) || args[i+1] != "/"+strconv.Itoa(int(n)) {
		t.Errorf("args %v: want --shard /%d (the shard count equal to completions)", args, n)
	}
	o := slices.Index(args, "--out")
	if o < 0 || o+1 >= len(args) || !strings.Contains(args[o+1], "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("args %v: want --out holding $(JOB_COMPLETION_INDEX), one folder per shard", args)
	}
	if !slices.Contains(args, "--continue") {
		t.Errorf("args %v: a restarted pod must resume its folder (--continue)", args)
	}
	env := false
	for _, e := range c.Env {
		if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			strings.Contains(e.ValueFrom.FieldRef.FieldPath, "batch.kubernetes.io/job-completion-index") {
			env = true
		}
	}
	if !env {
		t.Error("JOB_COMPLETION_INDEX is not declared from the completion-index annotation: $(JOB_COMPLETION_INDEX) would not expand")
	}
	mounted := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounted[m.Name] = m.MountPath
	}
	vol := false
	for _, v := range pod.Volumes {
		if mounted[v.Name] != "" && v.PersistentVolumeClaim != nil {
			vol = true
			if !strings.HasPrefix(args[o+1], mounted[v.Name]+"/") {
				t.Errorf("--out %s is not on the results volume mounted at %s", args[o+1], mounted[v.Name])
			}
			var pvc corev1.PersistentVolumeClaim
			decode(t, "results-pvc.yaml", &pvc)
			if pvc.Name != v.PersistentVolumeClaim.ClaimName {
				t.Errorf("the Job mounts claim %q, results-pvc.yaml defines %q", v.PersistentVolumeClaim.ClaimName, pvc.Name)
			}
		}
	}
	if !vol {
		t.Error("no persistent volume mounted: the results would die with the pods")
	}
	if cpu := c.Resources.Requests.Cpu(); cpu == nil || cpu.MilliValue() < 2000 {
		t.Errorf("cpu request %v: a shard needs the 2 cores its timings assume", cpu)
	}
}

func TestCollectPod(t *testing.T) {
	var pod corev1.Pod
	decode(t, "collect-pod.yaml", &pod)
	var pvc corev1.PersistentVolumeClaim
	decode(t, "results-pvc.yaml", &pvc)
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("the collect pod does not mount claim %q", pvc.Name)
	}
}

// A misspelt field must fail the strict decode: the test above would pass
// a manifest Kubernetes rejects otherwise.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	var job batchv1.Job
	bad := []byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n")
	if err := yaml.UnmarshalStrict(bad, &job); err == nil {
		t.Fatal("a misspelt field decoded without error")
	}
}
