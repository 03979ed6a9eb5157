"""A grouped pull request names each workload of its change set whose edit was refused, with
the reason and what to do (``bot.pipeline.proposals.refused_notes``)."""

from __future__ import annotations

from bot.model import ChangeSet, EditResult, FileChange, SourceError, WorkloadRef
from bot.pipeline.plan import ChangeSetEdit
from bot.pipeline.proposals import REFUSED_NOTE, refused_notes

API = WorkloadRef("Deployment", "bank", "api", "overlays/prod")


def test_a_refused_workload_is_named_in_its_change_sets_pull_request():
    why = f'{API}: kubectl kustomize failed: json: unknown field "spec". To do: make it by hand'
    edit = EditResult(
        files=(FileChange("overlays/prod/patch.yaml", b"", b"x"),),
        errors=(SourceError("base/api.yaml", 1, why),),
        failed=(API,),
    )
    notes = refused_notes(ChangeSetEdit(ChangeSet("overlays/prod/bank", ()), edit))
    assert [(n.code, n.message) for n in notes] == [
        (REFUSED_NOTE, f"not in this pull request: {why}")
    ]
    assert refused_notes(ChangeSetEdit(ChangeSet("k", ()), EditResult(failed=()))) == ()
