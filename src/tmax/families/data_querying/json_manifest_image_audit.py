"""Audit one cluster's workload manifests (Kubernetes objects written as JSON) with jq-style queries.
Each cluster's manifests sit in a folder named by a SHA-256 prefix of the cluster's name (the
delivered value). Variants: containers whose image is not pinned (no tag or `latest`, a digest pins),
containers missing a CPU or memory limit, and the pod replicas running each image repository. Traps by
level: `List` objects wrapping several workloads, init containers, registries with a port (`host:5000/x`
has no tag), digests; then other kinds (Services, ConfigMaps quoting image strings), StatefulSets,
DaemonSets and CronJobs (a pod template nested deeper), defaulted replicas, null limits, requests
without limits, backup files and compact one-line JSON."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at
from tmax.families.unseen import distinct

REFERENCE = r'''
import json
import os
import sys

TEMPLATES = {"Deployment": ("spec",), "StatefulSet": ("spec",), "DaemonSet": ("spec",),
             "CronJob": ("spec", "jobTemplate", "spec")}  # where each kind keeps its pod template


def workloads(root):
    """(kind, name, replicas or None, containers) of every workload in the *.json files under root."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fname in sorted(filenames):
            if not fname.endswith(".json"):
                continue
            with open(os.path.join(dirpath, fname)) as f:
                doc = json.load(f)
            for obj in doc.get("items", []) if doc.get("kind") == "List" else [doc]:
                kind = obj.get("kind")
                if kind not in TEMPLATES:
                    continue
                spec = obj
                for key in TEMPLATES[kind]:
                    spec = spec[key]
                pod = spec["template"]["spec"]
                replicas = obj["spec"].get("replicas", 1) if kind in ("Deployment", "StatefulSet") else None
                cs = (pod.get("initContainers") or []) + (pod.get("containers") or [])
                out.append((kind, obj["metadata"]["name"], replicas, cs))
    return out


def split(image):
    """(repository, tag or "", digest or "") of an image reference; a colon before the last slash is a port."""
    ref, _, digest = image.partition("@")
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1:], digest
    return ref, "", digest


def report(root, variant):
    lines = []
    if variant == "replicas":
        totals = {}
        for kind, name, replicas, cs in workloads(root):
            if replicas is None:
                continue
            for repo in sorted({split(c["image"])[0] for c in cs}):  # a pod counts once per repository
                totals[repo] = totals.get(repo, 0) + replicas
        lines = [f"{repo},{n}" for repo, n in totals.items()]
    for kind, name, replicas, cs in workloads(root) if variant != "replicas" else []:
        for c in cs:
            if variant == "unpinned":
                repo, tag, digest = split(c["image"])
                if not digest and tag in ("", "latest"):
                    lines.append(f"{kind}/{name} {c['name']} {c['image']}")
            else:
                limits = (c.get("resources") or {}).get("limits") or {}
                gone = [r for r in ("cpu", "memory") if not limits.get(r)]
                if gone:
                    lines.append(f"{kind}/{name} {c['name']} {','.join(gone)}")
    return "".join(ln + "\n" for ln in sorted(lines, key=lambda s: s.encode()))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

REPOS = ("nginx", "redis", "postgres", "busybox", "ghcr.io/acme/api", "ghcr.io/acme/web-frontend",
         "quay.io/prometheus/node-exporter", "registry.internal:5000/payments/worker",
         "registry.internal:5000/payments/ledger", "docker.io/library/haproxy", "envoyproxy/envoy")
TAGS = ("1.25.3", "7.2", "16.1", "v2.14.0", "2024.06.1", "3.19", "stable-alpine", "1.29-slim")
WORDS = ("checkout", "billing", "search", "gateway", "catalog", "auth", "ledger", "mailer", "reports",
         "metrics", "ingest", "scheduler", "profile", "inventory", "notify", "export")
SIDE = ("sidecar", "proxy", "logship", "migrate", "warmup", "agent")


@dataclass(frozen=True)
class Knobs:
    workloads: int  # workloads per cluster
    decoys: int  # other clusters' folders
    traps: int  # 1: files per workload, Lists, digests; 2: init containers, ports, requests only;
    #             3: other kinds, StatefulSets/DaemonSets/CronJobs, defaulted replicas; 4: null limits, junk


@register
class JsonManifestImageAudit(Family):
    name = "json_manifest_image_audit"
    domain = "data_querying"
    skill_types = ("Semi-structured Queries",)
    primitive_skills = ("JSON path queries", "jq filters", "flattening nested arrays", "NULL semantics",
                        "group-by aggregation", "deduplication by key")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("unpinned", "limits", "replicas")
    levels = {0: Knobs(workloads=4, decoys=1, traps=0), 1: Knobs(workloads=7, decoys=2, traps=1),
              2: Knobs(workloads=10, decoys=3, traps=2), 3: Knobs(workloads=14, decoys=3, traps=3),
              4: Knobs(workloads=18, decoys=3, traps=4)}

    def _container(self, t, name, force=None):
        k, rng = t.knobs, t.rng
        repo = rng.choice(REPOS if k.traps >= 2 else [r for r in REPOS if ":" not in r])
        r = rng.random() if force is None else force[0]
        if r < 0.2:
            image = repo
        elif r < 0.35:
            image = f"{repo}:latest"
        elif k.traps >= 1 and r < 0.5:
            digest = "".join(rng.choice("0123456789abcdef") for _ in range(64))
            image = f"{repo}@sha256:{digest}" if rng.random() < 0.6 else f"{repo}:latest@sha256:{digest}"
        else:
            image = f"{repo}:{rng.choice(TAGS)}"
        c = {"name": name, "image": image}
        r = rng.random() if force is None else force[1]
        cpu, mem = f"{rng.choice([100, 250, 500, 1000])}m", f"{rng.choice([128, 256, 512, 1024])}Mi"
        if r < 0.15:
            pass  # no resources at all
        elif r < 0.3:
            c["resources"] = {"limits": {"memory": mem}}
        elif r < 0.4:
            c["resources"] = {"limits": {"cpu": cpu}}
        elif k.traps >= 2 and r < 0.5:
            c["resources"] = {"requests": {"cpu": cpu, "memory": mem}}  # requests are not limits
        elif k.traps >= 4 and r < 0.58:
            c["resources"] = {"limits": {"cpu": cpu, "memory": None}}
        else:
            c["resources"] = {"limits": {"cpu": cpu, "memory": mem}, "requests": {"cpu": cpu}}
        return c

    def _workload(self, t, name, first):
        k, rng = t.knobs, t.rng
        kinds = ["Deployment"] * 4 + (["StatefulSet", "DaemonSet", "CronJob"] if k.traps >= 3 else [])
        kind = "Deployment" if first else rng.choice(kinds)
        # The first workload's two containers are unpinned and short of a limit: the unpinned and limits
        # variants have at least two answer lines.
        cs = [self._container(t, name, (0.0, 0.0) if first else None)]
        for side in rng.sample(SIDE, 1 if first else rng.choice([0, 0, 1, 2])):
            cs.append(self._container(t, side, (0.25, 0.2) if first else None))
        pod = {"containers": cs}
        if k.traps >= 2 and rng.random() < 0.3:
            pod["initContainers"] = [self._container(t, "init-" + rng.choice(SIDE))]
        tmpl = {"metadata": {"labels": {"app": name}}, "spec": pod}
        spec = {"selector": {"matchLabels": {"app": name}}, "template": tmpl}
        if kind in ("Deployment", "StatefulSet") and not (k.traps >= 3 and rng.random() < 0.25):
            spec["replicas"] = rng.randrange(1, 9)  # left out: Kubernetes runs one
        if kind == "CronJob":
            spec = {"schedule": f"{rng.randrange(60)} {rng.randrange(24)} * * *", "jobTemplate": {"spec": {
                "template": tmpl}}}
        return {"apiVersion": "batch/v1" if kind == "CronJob" else "apps/v1", "kind": kind,
                "metadata": {"name": name, "labels": {"app": name}}, "spec": spec}

    def _cluster(self, t):
        """{relative path: JSON text} of one cluster's folder."""
        k, rng = t.knobs, t.rng
        names = distinct(lambda: "-".join(rng.sample(WORDS, 2)), k.workloads)
        objs = [self._workload(t, n, i == 0) for i, n in enumerate(names)]
        if k.traps >= 3:  # not workloads, though they mention images
            objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "image-overrides"},
                         "data": {"image": f"{rng.choice(REPOS)}:latest", "fallback": rng.choice(REPOS)}})
            objs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": names[0]},
                         "spec": {"ports": [{"port": 80}], "selector": {"app": names[0]}}})
        rng.shuffle(objs)

        def dump(doc):
            return json.dumps(doc, separators=(",", ":")) + "\n" if k.traps >= 4 and rng.random() < 0.4 \
                else json.dumps(doc, indent=2) + "\n"

        if k.traps == 0:  # one List of every object
            return {"workloads.json": dump({"apiVersion": "v1", "kind": "List", "items": objs})}
        files, i = {}, 0
        while i < len(objs):
            n = rng.choice([1, 1, 1, 3]) if k.traps >= 1 else 1
            group = objs[i:i + n]
            i += n
            sub = rng.choice(["", "apps/", "platform/"]) if k.traps >= 2 else ""
            name = f"{sub}{group[0]['metadata']['name']}-{group[0]['kind'].lower()}.json"
            files[name] = dump(group[0] if len(group) == 1 else {"apiVersion": "v1", "kind": "List",
                                                                  "items": group})
        if k.traps >= 4:  # an old copy beside the live manifest: not a manifest
            old = self._workload(t, names[1], True)
            files[f"{names[1]}-deployment.json.bak"] = json.dumps(old, indent=2) + "\n"
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        ref = run_python(REFERENCE)
        clusters = [self._cluster(t) for _ in range(1 + k.decoys)]
        target, keys = keyed(t, k.decoys, *(x for c in clusters for x in c.values()))
        for key, files in zip(keys, clusters):
            for rel, text in sorted(files.items()):
                t.add_file(f"/app/manifests/{key}/{rel}", text)
        with tempfile.TemporaryDirectory(prefix="tmax-ref-") as tmp:  # the truth from the very files shipped
            for rel, text in clusters[0].items():
                path = Path(tmp, rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
            truth = ref["report"](tmp, variant)
        rules = rules_at(k.traps, [
            (0, "A file holds one object or a `List` whose `items` are objects; a Deployment's containers are in "
                "`spec.template.spec.containers`."),
            (1, "The workloads are spread over several files. An image pinned by digest (`repo@sha256:...`, with "
                "or without a tag) is pinned."),
            (2, "Manifests are in subfolders too. Init containers (`initContainers`) are containers like any "
                "other. A registry may carry a port (`registry.internal:5000/team/app` has no tag). Resource "
                "`requests` are not limits."),
            (3, "Workloads are the kinds `Deployment`, `StatefulSet`, `DaemonSet` and `CronJob` (its pod template "
                "is under `spec.jobTemplate.spec.template`); every other kind is not a workload, whatever images "
                "it mentions. A Deployment or StatefulSet without `replicas` runs 1."),
            (4, "Only files ending in `.json` are manifests. Some are written on one line. A limit set to `null` or "
                "an empty string is no limit.")])
        ask = {"unpinned": ("every container whose image is not pinned to a release, meaning it has no tag or "
                            "the tag `latest` and no digest, as lines `<kind>/<workload> <container> <image>` "
                            "(the image exactly as written)"),
               "limits": ("every container that lacks a CPU or a memory limit (`resources.limits.cpu`, "
                          "`resources.limits.memory`), as lines `<kind>/<workload> <container> <missing>`, where "
                          "missing is `cpu`, `memory` or `cpu,memory`"),
               "replicas": ("for every image repository (the image without its tag and digest), the number of "
                            "pod replicas that run it, summed over the Deployments and StatefulSets using it (a "
                            "workload counts once per repository, however many of its containers use it"
                            + ("; DaemonSets and CronJobs are left out" if k.traps >= 3 else "")
                            + "), as CSV lines `repository,replicas` without a header")}[variant]
        intro = ("Each cluster's workload manifests (Kubernetes objects written as JSON) are in "
                 "`/app/manifests/<KEY>/`, where KEY is " + key_how("cluster's name") + "; the other "
                 "folders are other clusters.")
        out = f"/app/out/{variant}.txt"
        pose(t, intro, rules, f"For the cluster named below I need {ask}. Sort the lines in byte order (`LC_ALL=C "
             "sort`).", target, "the cluster's name", "audit.py", REFERENCE, f'"/app/manifests/$key" {variant}', out)
        t.expect_output(out, truth, "the audit")
