"""Complete JSON objects in GitHub's shapes, built from the description's own examples.

GitHub's examples are the templates (toolchain.md section 5: responses are strict on
``required``, so partial objects fail validation); each builder copies one and overrides the
fields the emulator owns. Known defects of the examples are patched here
(``requested_teams[].type`` is required but missing from the ``pull-request`` example).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from tests.support.github.openapi import examples


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _example(name: str) -> Any:
    return copy.deepcopy(examples()[name])


def user(web: str, api: str, login: str, user_id: int, kind: str = "User") -> dict[str, Any]:
    obj: dict[str, Any] = _example("simple-user")
    obj.update(
        login=login,
        id=user_id,
        node_id=f"U_{user_id}",
        url=f"{api}/users/{login}",
        html_url=f"{web}/{login}",
        type=kind,
    )
    for key in list(obj):
        if key.endswith("_url") and key not in ("url", "html_url", "avatar_url"):
            obj[key] = f"{api}/users/{login}/{key.removesuffix('_url')}"
    return obj


def label(api: str, full_name: str, name: str, label_id: int, color: str) -> dict[str, Any]:
    obj: dict[str, Any] = _example("label")
    obj.update(
        id=label_id,
        node_id=f"LA_{label_id}",
        url=f"{api}/repos/{full_name}/labels/{name}",
        name=name,
        color=color,
        default=False,
        description="",
    )
    return obj


def repository(
    web: str,
    api: str,
    owner: dict[str, Any],
    name: str,
    repo_id: int,
    default_branch: str,
    created: datetime,
) -> dict[str, Any]:
    obj: dict[str, Any] = _example("full-repository")
    full = f"{owner['login']}/{name}"
    for key, value in list(obj.items()):
        if isinstance(value, str) and "octocat/Hello-World" in value:
            obj[key] = (
                value.replace("https://api.github.com", api)
                .replace("https://github.com", web)
                .replace("octocat/Hello-World", full)
            )
    obj.update(
        id=repo_id,
        node_id=f"R_{repo_id}",
        name=name,
        full_name=full,
        owner=owner,
        private=True,
        visibility="private",
        html_url=f"{web}/{full}",
        url=f"{api}/repos/{full}",
        clone_url=f"{web}/{full}.git",
        git_url=f"{web}/{full}.git",
        default_branch=default_branch,
        created_at=iso(created),
        updated_at=iso(created),
        pushed_at=iso(created),
        organization=None,
        template_repository=None,
        has_discussions=False,
    )
    for key in ("parent", "source"):
        obj.pop(key, None)
    return obj


def short_repository(full: dict[str, Any]) -> dict[str, Any]:
    """The ``repository`` shape nested in pull requests (a subset of ``full-repository``)."""
    obj = copy.deepcopy(full)
    for key in ("organization", "network_count", "subscribers_count"):
        obj.pop(key, None)
    return obj


def issue(
    web: str,
    api: str,
    full_name: str,
    *,
    number: int,
    issue_id: int,
    title: str,
    body: str | None,
    author: dict[str, Any],
    state: str,
    labels: list[dict[str, Any]],
    assignees: list[dict[str, Any]],
    comments: int,
    created: datetime,
    updated: datetime,
    closed: datetime | None,
    is_pull: bool,
    state_reason: str | None,
) -> dict[str, Any]:
    obj: dict[str, Any] = _example("issue")
    base = f"{api}/repos/{full_name}/issues/{number}"
    obj.update(
        id=issue_id,
        node_id=f"I_{issue_id}",
        url=base,
        repository_url=f"{api}/repos/{full_name}",
        labels_url=base + "/labels{/name}",
        comments_url=base + "/comments",
        events_url=base + "/events",
        html_url=f"{web}/{full_name}/{'pull' if is_pull else 'issues'}/{number}",
        number=number,
        state=state,
        title=title,
        body=body,
        user=author,
        labels=labels,
        assignee=assignees[0] if assignees else None,
        assignees=assignees,
        milestone=None,
        locked=False,
        comments=comments,
        closed_at=iso(closed) if closed else None,
        created_at=iso(created),
        updated_at=iso(updated),
        closed_by=None,
        author_association="NONE",
        state_reason=state_reason,
    )
    obj.pop("pinned_comment", None)
    if state_reason is None:
        # nullable + enum without null: openapi-core rejects null, GitHub sends null; omit it
        obj.pop("state_reason")
    if is_pull:
        obj["pull_request"] = {
            "url": f"{api}/repos/{full_name}/pulls/{number}",
            "html_url": f"{web}/{full_name}/pull/{number}",
            "diff_url": f"{web}/{full_name}/pull/{number}.diff",
            "patch_url": f"{web}/{full_name}/pull/{number}.patch",
            "merged_at": None,
        }
    else:
        obj.pop("pull_request", None)
    return obj


def issue_comment(
    web: str,
    api: str,
    full_name: str,
    number: int,
    comment_id: int,
    body: str,
    author: dict[str, Any],
    created: datetime,
) -> dict[str, Any]:
    obj: dict[str, Any] = _example("issue-comment")
    obj.update(
        id=comment_id,
        node_id=f"IC_{comment_id}",
        url=f"{api}/repos/{full_name}/issues/comments/{comment_id}",
        html_url=f"{web}/{full_name}/issues/{number}#issuecomment-{comment_id}",
        issue_url=f"{api}/repos/{full_name}/issues/{number}",
        body=body,
        user=author,
        created_at=iso(created),
        updated_at=iso(created),
        author_association="NONE",
    )
    return obj


def pull_request(
    web: str,
    api: str,
    full_name: str,
    *,
    simple: bool,
    issue_obj: dict[str, Any],
    repo_obj: dict[str, Any],
    head_ref: str,
    head_sha: str,
    base_ref: str,
    base_sha: str,
    draft: bool,
    merged: bool,
    merged_at: datetime | None,
    merge_commit_sha: str | None,
    merged_by: dict[str, Any] | None,
    mergeable: bool | None,
    reviewers: list[dict[str, Any]],
    teams: list[dict[str, Any]],
    commits: int,
) -> dict[str, Any]:
    obj: dict[str, Any] = (
        _example("pull-request-simple-items")[0] if simple else _example("pull-request")
    )
    number = issue_obj["number"]
    base = f"{api}/repos/{full_name}/pulls/{number}"
    html = f"{web}/{full_name}/pull/{number}"
    owner = repo_obj["owner"]
    nested = short_repository(repo_obj)
    obj.update(
        url=base,
        id=issue_obj["id"],
        node_id=f"PR_{issue_obj['id']}",
        html_url=html,
        diff_url=html + ".diff",
        patch_url=html + ".patch",
        issue_url=issue_obj["url"],
        commits_url=base + "/commits",
        review_comments_url=base + "/comments",
        review_comment_url=f"{api}/repos/{full_name}/pulls/comments{{/number}}",
        comments_url=issue_obj["comments_url"],
        statuses_url=f"{api}/repos/{full_name}/statuses/{head_sha}",
        number=number,
        state=issue_obj["state"],
        locked=False,
        title=issue_obj["title"],
        user=issue_obj["user"],
        body=issue_obj["body"],
        labels=issue_obj["labels"],
        milestone=None,
        active_lock_reason=None,
        created_at=issue_obj["created_at"],
        updated_at=issue_obj["updated_at"],
        closed_at=issue_obj["closed_at"],
        merged_at=iso(merged_at) if merged_at else None,
        merge_commit_sha=merge_commit_sha,
        assignee=issue_obj["assignee"],
        assignees=issue_obj["assignees"],
        requested_reviewers=reviewers,
        requested_teams=teams,
        head={
            "label": f"{owner['login']}:{head_ref}",
            "ref": head_ref,
            "sha": head_sha,
            "user": owner,
            "repo": nested,
        },
        base={
            "label": f"{owner['login']}:{base_ref}",
            "ref": base_ref,
            "sha": base_sha,
            "user": owner,
            "repo": nested,
        },
        _links={
            "self": {"href": base},
            "html": {"href": html},
            "issue": {"href": issue_obj["url"]},
            "comments": {"href": issue_obj["comments_url"]},
            "review_comments": {"href": base + "/comments"},
            "review_comment": {"href": f"{api}/repos/{full_name}/pulls/comments{{/number}}"},
            "commits": {"href": base + "/commits"},
            "statuses": {"href": f"{api}/repos/{full_name}/statuses/{head_sha}"},
        },
        author_association="NONE",
        auto_merge=None,
        draft=draft,
    )
    if not simple:
        obj.update(
            merged=merged,
            mergeable=mergeable,
            rebaseable=mergeable,
            mergeable_state="clean"
            if mergeable
            else ("dirty" if mergeable is False else "unknown"),
            merged_by=merged_by,
            comments=issue_obj["comments"],
            review_comments=0,
            maintainer_can_modify=False,
            commits=commits,
            additions=0,
            deletions=0,
            changed_files=0,
        )
    return obj


def team(api: str, org: str, slug: str, team_id: int) -> dict[str, Any]:
    return {
        "id": team_id,
        "node_id": f"T_{team_id}",
        "url": f"{api}/teams/{team_id}",
        "html_url": f"{api}/orgs/{org}/teams/{slug}",
        "name": slug,
        "slug": slug,
        "description": None,
        "privacy": "closed",
        "notification_setting": "notifications_enabled",
        "permission": "pull",
        "members_url": f"{api}/teams/{team_id}/members{{/member}}",
        "repositories_url": f"{api}/teams/{team_id}/repos",
        "type": "organization",
        "parent": None,
    }


def commit(
    web: str, api: str, full_name: str, info: Any, author: dict[str, Any] | None
) -> dict[str, Any]:
    obj: dict[str, Any] = _example("commit-items")[0]
    obj.update(
        url=f"{api}/repos/{full_name}/commits/{info.sha}",
        sha=info.sha,
        node_id=f"C_{info.sha}",
        html_url=f"{web}/{full_name}/commit/{info.sha}",
        comments_url=f"{api}/repos/{full_name}/commits/{info.sha}/comments",
        author=author if author is not None else {},
        committer=author if author is not None else {},
        parents=[
            {
                "url": f"{api}/repos/{full_name}/commits/{p}",
                "sha": p,
                "html_url": f"{web}/{full_name}/commit/{p}",
            }
            for p in info.parents
        ],
    )
    obj.pop("stats", None)
    obj.pop("files", None)
    obj["commit"].update(
        url=f"{api}/repos/{full_name}/git/commits/{info.sha}",
        author={"name": info.author_name, "email": info.author_email, "date": info.author_date},
        committer={
            "name": info.committer_name,
            "email": info.committer_email,
            "date": info.committer_date,
        },
        message=info.message,
        tree={"url": f"{api}/repos/{full_name}/git/trees/{info.tree}", "sha": info.tree},
        comment_count=0,
    )
    return obj


def git_ref(api: str, full_name: str, branch: str, sha: str) -> dict[str, Any]:
    return {
        "ref": f"refs/heads/{branch}",
        "node_id": f"REF_{sha[:12]}",
        "url": f"{api}/repos/{full_name}/git/refs/heads/{branch}",
        "object": {
            "type": "commit",
            "sha": sha,
            "url": f"{api}/repos/{full_name}/git/commits/{sha}",
        },
    }


def installation(
    api: str, installation_id: int, app_id: int, account: dict[str, Any]
) -> dict[str, Any]:
    obj: dict[str, Any] = _example("installation")
    # GET /app/installations describes ``account`` as allOf(simple-user, enterprise): both shapes
    account = {
        **account,
        "name": account["login"],
        "slug": account["login"].lower(),
        "created_at": "2020-01-01T00:00:00Z",
        "updated_at": "2020-01-01T00:00:00Z",
        "website_url": None,
        "description": None,
    }
    obj.update(
        id=installation_id,
        account=account,
        app_id=app_id,
        target_id=account["id"],
        access_tokens_url=f"{api}/app/installations/{installation_id}/access_tokens",
        repositories_url=f"{api}/installation/repositories",
        html_url=f"{api}/installations/{installation_id}",
        repository_selection="selected",
    )
    return obj


def installation_token(token: str, expires: datetime) -> dict[str, Any]:
    return {
        "token": token,
        "expires_at": iso(expires),
        "permissions": {"contents": "write", "pull_requests": "write", "issues": "write"},
        "repository_selection": "selected",
    }


def error(message: str, status: int, errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": str(status),
    }
    if errors is not None:
        obj["errors"] = errors
    return obj
