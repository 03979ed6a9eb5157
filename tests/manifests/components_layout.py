"""A public-style Kustomize layout built on components (the shape of a well-known bank demo
application's ``production-fwi`` overlays): a base with two Deployments; components whose
patches select every Deployment by ``target:`` (strategic-merge with
``metadata.name: ignored-by-kustomize`` and no ``apiVersion``, and JSON 6902), one of which adds
a sidecar container; overlays that pull several components patching the same Deployments, and
the ``production-fwi`` overlay's own strategic-merge and JSON 6902 patches."""

from __future__ import annotations

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: {name}
        image: {name}:1
        env:
        - name: PORT
          value: "8080"
        resources:
          requests:
            cpu: 100m # the base's
            memory: 64Mi
          limits:
            memory: 256Mi
      volumes:
      - name: tmp
        emptyDir: {{}}
"""

COMPONENT = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
EVERY_DEPLOYMENT = "  target:\n    kind: Deployment\n"

LAYOUT: dict[str, str] = {
    "base/kustomization.yaml": "resources:\n- userservice.yaml\n- contacts.yaml\n",
    "base/userservice.yaml": DEPLOYMENT.format(name="userservice"),
    "base/contacts.yaml": DEPLOYMENT.format(name="contacts"),
    # every Deployment gets two replicas
    "components/production/kustomization.yaml": (
        COMPONENT + "patches:\n- path: production.yaml\n" + EVERY_DEPLOYMENT
    ),
    "components/production/production.yaml": (
        "kind: Deployment\nmetadata:\n  name: ignored-by-kustomize\nspec:\n  replicas: 2\n"
    ),
    # every Deployment gets a service account (strategic merge, the patch's name is ignored)
    "components/service-account/kustomization.yaml": (
        COMPONENT + "patches:\n- path: set-sa.yaml\n" + EVERY_DEPLOYMENT
    ),
    "components/service-account/set-sa.yaml": (
        "kind: Deployment\nmetadata:\n  name: ignored-by-kustomize\nspec:\n  template:\n"
        "    spec:\n      serviceAccountName: bank\n"
    ),
    # JSON 6902 on the first container of every Deployment
    "components/fwi/kustomization.yaml": (
        COMPONENT + "patches:\n- path: add-fwi.yaml\n" + EVERY_DEPLOYMENT
    ),
    "components/fwi/add-fwi.yaml": """\
- op: add
  path: /spec/template/spec/containers/0/env/-
  value:
    name: GOOGLE_APPLICATION_CREDENTIALS
    value: /var/run/secrets/tokens/gcp-ksa/google-application-credentials.json
- op: add
  path: /spec/template/spec/volumes/-
  value:
    name: gcp-ksa
    emptyDir: {}
""",
    # a sidecar in every Deployment (Kustomize puts it first in the list)
    "components/proxy/kustomization.yaml": (
        COMPONENT + "patches:\n- path: add-proxy.yaml\n" + EVERY_DEPLOYMENT
    ),
    "components/proxy/add-proxy.yaml": """\
kind: Deployment
metadata:
  name: ignored-by-kustomize
spec:
  template:
    spec:
      containers:
      - name: cloud-sql-proxy
        image: cloud-sql-proxy:2
        resources:
          requests:
            cpu: 100m # the sidecar's
            memory: 64Mi
""",
    "components/proxy-fwi/kustomization.yaml": (
        COMPONENT + "components:\n- ../proxy\npatches:\n- path: add-fwi.yaml\n" + EVERY_DEPLOYMENT
    ),
    "components/proxy-fwi/add-fwi.yaml": """\
kind: Deployment
metadata:
  name: ignored-by-kustomize
spec:
  template:
    spec:
      containers:
      - name: cloud-sql-proxy
        env:
        - name: GOOGLE_APPLICATION_CREDENTIALS
          value: /var/run/secrets/tokens/gcp-ksa/creds.json
""",
    "overlays/production-fwi/kustomization.yaml": """\
# production with fleet workload identity
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../base
components:
- ../../components/production
- ../../components/service-account
- ../../components/fwi
- ../../components/proxy-fwi
patches:
- path: contacts.yaml
- target:
    kind: Deployment
    name: userservice
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/1/image
      value: userservice:2
""",
    "overlays/production-fwi/contacts.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: contacts
spec:
  template:
    spec:
      containers:
      - name: contacts
        resources:
          limits:
            memory: 512Mi # contacts caches more in production
""",
    "overlays/production/kustomization.yaml": (
        "resources:\n- ../../base\ncomponents:\n- ../../components/production\n"
        "- ../../components/service-account\n- ../../components/proxy\n"
    ),
    "overlays/development/kustomization.yaml": "resources:\n- ../../base\n",
}
"""The repository: three overlays over one base; ``components/proxy-fwi`` and ``components/fwi``
are ``production-fwi``'s own (no other overlay reads them)."""

FWI = "overlays/production-fwi"
