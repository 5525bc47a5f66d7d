"""``/api/docs`` from this site's own copy of Swagger UI (it loaded a public CDN's, and was blank offline), and the
API's short operation ids (issue 31)."""

from __future__ import annotations

import re

import pytest
from web_world import World

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_docs_page_loads_only_this_sites_files(world: World) -> None:
    page = world.client.get("/api/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/static/vendor/swagger-ui/") for a in assets), assets
    assert "://" not in page.text  # nothing from elsewhere
    assert '"validatorUrl": null' in page.text  # its badge would send the spec to validator.swagger.io
    for asset in assets:
        served = world.client.get(asset)
        assert served.status_code == 200 and len(served.content) > 500, asset
    assert world.client.get("/api/openapi.json").status_code == 200


def test_operation_ids_are_short_and_unique(world: World) -> None:
    spec = world.client.get("/api/openapi.json").json()
    ids = {
        (method.upper(), path): op["operationId"] for path, ops in spec["paths"].items() for method, op in ops.items()
    }
    assert len(set(ids.values())) == len(ids), sorted(ids.values())
    assert not [i for i in ids.values() if "api_v1" in i or len(i) > 32], ids
    assert ids["GET", "/api/v1/leaderboards/{name}/rankings"] == "get_rankings"
    assert ids["POST", "/api/v1/submissions"] == "submit"
    assert ids["DELETE", "/api/v1/submissions/{submission_id}"] == "delete_submission"
    assert ids["DELETE", "/api/v1/admin/submissions/{submission_id}"] == "admin_delete_submission"
