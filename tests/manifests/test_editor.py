"""The span editor through the public API: golden bytes, every style a file may use."""

from __future__ import annotations

import pytest

from bot.config.repo import RepoConfig
from bot.manifests import apply_changes, discover
from bot.manifests.errors import EditError
from bot.manifests.textedit import TextEdit, apply_edits
from bot.model import FieldChange, FieldId
from tests.manifests.conftest import changed_lines, edit, snapshot

DEPLOYMENT = """\
# web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web   # the storefront
  namespace: shop
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: app
          image: "nginx:1.27"
          resources:
            requests:
              cpu: "250m"     # measured 2024-05
              memory: 512Mi
            limits:
              memory: '1Gi'
"""


def test_changes_only_the_value_keeping_quotes_and_comments(repo):
    root = repo({"web.yaml": DEPLOYMENT})
    result = edit(
        root, [("web", "requests.cpu", 0.3, "app"), ("web", "limits.memory", 1.5 * 2**30, "app")]
    )
    assert not result.errors and not result.failed
    expected = DEPLOYMENT.replace(
        'cpu: "250m"     # measured', 'cpu: "300m"     # measured'
    ).replace("memory: '1Gi'", "memory: '1536Mi'")
    assert (root / "web.yaml").read_text() == expected
    removed, added = changed_lines(result.diff)
    assert removed == [
        '              cpu: "250m"     # measured 2024-05',
        "              memory: '1Gi'",
    ]
    assert added == [
        '              cpu: "300m"     # measured 2024-05',
        "              memory: '1536Mi'",
    ]
    assert "--- a/web.yaml" in result.diff and "+++ b/web.yaml" in result.diff


def test_write_false_changes_nothing_on_disk(repo):
    root = repo({"web.yaml": DEPLOYMENT})
    before = snapshot(root)
    result = edit(root, [("web", "requests.cpu", 0.3, "app")], write=False)
    assert snapshot(root) == before
    assert result.files and result.files[0].new != result.files[0].old


def test_crlf_and_bom_survive(repo):
    raw = ("\ufeff" + DEPLOYMENT).replace("\n", "\r\n").encode()
    root = repo({"web.yaml": raw})
    result = edit(
        root, [("web", "requests.memory", 600 * 2**20, "app"), ("web", "replicas", 5, None)]
    )
    assert not result.errors
    assert (root / "web.yaml").read_bytes() == raw.replace(
        b"memory: 512Mi", b"memory: 600Mi"
    ).replace(b"replicas: 3", b"replicas: 5")


def test_adds_missing_keys_in_the_files_indentation_and_line_endings(repo):
    text = DEPLOYMENT.replace("\n", "\r\n")
    root = repo({"web.yaml": text})
    result = edit(root, [("web", "limits.cpu", 1, "app"), ("web", "requests.cpu", 0.5, "app")])
    assert not result.errors, result.errors
    assert (root / "web.yaml").read_bytes().decode() == text.replace('"250m"', '"500m"').replace(
        "memory: '1Gi'\r\n", "memory: '1Gi'\r\n              cpu: 1000m\r\n"
    )


def test_flow_style_mappings(repo):
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  template:
    spec:
      containers:
      - {name: api, image: api, resources: {requests: {cpu: 0.5, memory: 256Mi}}}
"""
    root = repo({"api.yaml": text})
    result = edit(
        root, [("api", "requests.cpu", 0.75, "api"), ("api", "limits.memory", 2**29, "api")]
    )
    assert not result.errors, result.errors
    assert (root / "api.yaml").read_text() == text.replace(
        "{requests: {cpu: 0.5, memory: 256Mi}}",
        "{requests: {cpu: 0.75, memory: 256Mi}, limits: {memory: 512Mi}}",
    )


def test_creates_a_resources_block_where_none_exists(repo):
    text = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  template:
    spec:
      containers:
      - name: pg
        image: postgres
        # no resources yet
      - name: exporter
        image: exporter
"""
    root = repo({"db.yaml": text})
    result = edit(root, [("db", "requests.cpu", 0.1, "pg"), ("db", "requests.memory", 2**30, "pg")])
    assert not result.errors, result.errors
    assert (root / "db.yaml").read_text() == text.replace(
        "        image: postgres\n",
        "        image: postgres\n        resources:\n          requests:\n            cpu: 100m\n"
        "            memory: 1Gi\n",
    )


def test_empty_limits_key_gets_a_block(repo):
    text = DEPLOYMENT.replace(
        "            limits:\n              memory: '1Gi'\n", "            limits:\n"
    )
    root = repo({"web.yaml": text})
    result = edit(root, [("web", "limits.memory", 2**30, "app")])
    assert not result.errors, result.errors
    assert (root / "web.yaml").read_text() == text + "              memory: 1Gi\n"


def test_removing_a_value_removes_its_line_and_keeps_its_comment(repo):
    root = repo({"web.yaml": DEPLOYMENT})
    result = edit(root, [("web", "requests.cpu", None, "app")])
    assert not result.errors, result.errors
    assert (root / "web.yaml").read_text() == DEPLOYMENT.replace(
        '              cpu: "250m"     # measured 2024-05\n', "              # measured 2024-05\n"
    )


def test_missing_final_newline_and_document_separators(repo):
    text = (
        "---\n"
        + DEPLOYMENT
        + "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n...\n---\n"
        + DEPLOYMENT.replace("name: web ", "name: web2 ").rstrip("\n")
    )
    root = repo({"all.yaml": text})
    result = edit(root, [("web2", "limits.memory", 2**31, "app")])
    assert not result.errors, result.errors
    new = (root / "all.yaml").read_text()
    assert new == text[: text.rindex("'1Gi'")] + "'2Gi'"
    assert not new.endswith("\n")


def test_kind_list_items(repo):
    text = """\
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: a
    spec:
      template:
        spec:
          containers:
            - name: c
              resources:
                requests:
                  cpu: 1
"""
    root = repo({"list.yaml": text})
    result = edit(root, [("a", "requests.cpu", 2, "c")])
    assert not result.errors, result.errors
    assert (root / "list.yaml").read_text() == text.replace("cpu: 1\n", "cpu: 2\n")


def test_anchor_shared_by_two_containers_is_refused_and_nothing_written(repo):
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: twins
spec:
  template:
    spec:
      containers:
        - name: a
          resources: &res
            requests:
              cpu: 100m
        - name: b
          resources: *res
"""
    root = repo({"twins.yaml": text})
    before = snapshot(root)
    result = edit(root, [("twins", "requests.cpu", 0.2, "a")])
    assert [str(r) for r in result.failed] == ["Deployment/default/twins@default"]
    assert "cpu of b reads" in result.errors[0].message or "cpu of a" in result.errors[0].message
    assert snapshot(root) == before and not result.files


def test_anchor_used_once_is_edited_at_its_definition(repo):
    text = """\
x-defaults: &limits
  memory: 1Gi
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: one
spec:
  template:
    spec:
      containers:
        - name: a
          resources:
            limits: {<<: *merged, cpu: 1}
            requests: &merged
              memory: 256Mi
"""
    root = repo({"one.yaml": text.replace("{<<: *merged, cpu: 1}", "{cpu: 1}")})
    result = edit(root, [("one", "requests.memory", 2**29, "a")])
    assert not result.errors, result.errors
    assert (root / "one.yaml").read_text() == text.replace(
        "{<<: *merged, cpu: 1}", "{cpu: 1}"
    ).replace("memory: 256Mi", "memory: 512Mi")


def test_hpa_fields(repo):
    hpa = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2 # floor
  maxReplicas: 10
  metrics:
    - type: ContainerResource
      containerResource:
        name: cpu
        container: app
        target:
          type: Utilization
          averageUtilization: 60
"""
    root = repo({"web.yaml": DEPLOYMENT, "hpa.yaml": hpa})
    result = edit(
        root,
        [
            ("web", "hpa.minReplicas", 3, None),
            ("web", "hpa.maxReplicas", 12, None),
            ("web", "hpa.target.cpu", 75, "app"),
        ],
    )
    assert not result.errors, result.errors
    assert (root / "hpa.yaml").read_text() == hpa.replace(
        "minReplicas: 2 #", "minReplicas: 3 #"
    ).replace("maxReplicas: 10", "maxReplicas: 12").replace(
        "averageUtilization: 60", "averageUtilization: 75"
    )
    assert (root / "web.yaml").read_text() == DEPLOYMENT


def test_overlapping_edits_are_refused():
    with pytest.raises(EditError):
        apply_edits("f", "abcdef", [TextEdit(1, 4, "x"), TextEdit(2, 3, "y")])
    assert (
        apply_edits("f", "abcdef", [TextEdit(4, 4, "2"), TextEdit(1, 2, "B"), TextEdit(4, 4, "3")])
        == "aBcd23ef"
    )


def test_write_leaves_no_temporary_files_and_keeps_the_mode(repo):
    root = repo({"web.yaml": DEPLOYMENT})
    (root / "web.yaml").chmod(0o640)
    result = edit(root, [("web", "requests.cpu", 0.3, "app")])
    assert not result.errors
    assert sorted(p.name for p in root.iterdir()) == ["web.yaml"]
    assert (root / "web.yaml").stat().st_mode & 0o777 == 0o640


def test_a_stale_inventory_writes_nothing(repo):
    root = repo({"web.yaml": DEPLOYMENT})
    config = RepoConfig()
    discovery = discover(root, config)
    inventory = discovery.inventory
    ref = inventory.workloads[0].ref
    first = apply_changes(
        root,
        discovery,
        [FieldChange(ref, FieldId.REQUESTS_CPU, 0.3, container="app")],
        config,
        write=True,
    )
    assert first.files and not first.errors
    after_first = (root / "web.yaml").read_bytes()
    second = apply_changes(
        root,
        discovery,
        [FieldChange(ref, FieldId.LIMITS_MEMORY, 2**31, container="app")],
        config,
        write=True,
    )
    assert second.failed == (ref,) and "changed on disk since discovery" in second.errors[0].message
    assert (root / "web.yaml").read_bytes() == after_first


def test_keys_added_at_the_end_of_a_file_without_final_newline(repo):
    text = DEPLOYMENT.rstrip("\n")
    root = repo({"web.yaml": text})
    result = edit(root, [("web", "limits.cpu", 2, "app")])
    assert not result.errors, result.errors
    assert (root / "web.yaml").read_text() == text + "\n              cpu: 2000m"


def test_new_keys_follow_a_four_space_indentation(repo):
    text = """\
apiVersion: apps/v1
kind: Deployment
metadata:
    name: wide
spec:
    template:
        spec:
            containers:
                -   name: app
                    image: app
"""
    root = repo({"wide.yaml": text})
    result = edit(root, [("wide", "requests.memory", 2**28, "app"), ("wide", "replicas", 2, None)])
    assert not result.errors, result.errors
    assert (root / "wide.yaml").read_text() == text.replace(
        "                    image: app\n",
        "                    image: app\n                    resources:\n"
        "                        requests:\n                            memory: 256Mi\n",
    ) + "    replicas: 2\n"


def test_nested_and_outer_keys_added_at_the_same_place(repo):
    text = DEPLOYMENT.replace("            limits:\n              memory: '1Gi'\n", "").replace(
        "              memory: 512Mi\n", ""
    )
    root = repo({"web.yaml": text})
    result = edit(root, [("web", "limits.cpu", 1, "app"), ("web", "requests.memory", 2**28, "app")])
    assert not result.errors, result.errors
    assert (root / "web.yaml").read_text() == text + (
        "              memory: 256Mi\n            limits:\n              cpu: 1000m\n"
    )
