"""The chart's player identity values (through the real Helm engine): the development Login is
off by default and refused outside a development environment, the identity provider's
settings reach gateways and matchmaking alike, and impossible combinations fail with a
sentence."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from tests.deploy.chart import full, install, one, pod_spec, render, value_set

OIDC = {"issuer": "https://login.example.invalid/realms/games", "audience": "machiavelox"}


def env_of(docs: list[dict[str, Any]], component: str) -> dict[str, str | None]:
    [container] = pod_spec(one(docs, "Deployment", full(component)))["containers"]
    return {e["name"]: e.get("value") for e in container["env"]}


@pytest.mark.parametrize("name", ["default", "production", "postgres-redis"])
def test_the_development_login_is_off_unless_asked_for(name: str) -> None:
    assert env_of(render(value_set(name)), "gateway")["MACHIAVELOX_GATEWAY_DEV_LOGIN"] == "false"


def test_a_development_environment_may_turn_it_on() -> None:
    env = env_of(render(value_set("minimal")), "gateway")
    assert env["MACHIAVELOX_GATEWAY_DEV_LOGIN"] == "true"
    assert (env["MACHIAVELOX_GATEWAY_LOGIN_RATE"], env["MACHIAVELOX_GATEWAY_LOGIN_BURST"]) == (
        "10", "50")


def test_gateways_and_matchmaking_accept_the_same_tokens() -> None:
    docs = render(value_set("production"))
    gateway, matchmaking = env_of(docs, "gateway"), env_of(docs, "matchmaking")
    identity = {k: v for k, v in gateway.items() if k.startswith(("MACHIAVELOX_OIDC_",
                                                                  "MACHIAVELOX_TOKEN_"))}
    assert identity == {k: v for k, v in matchmaking.items() if k in identity}
    assert identity["MACHIAVELOX_TOKEN_MODE"] == "oidc"
    assert identity["MACHIAVELOX_OIDC_ISSUER"] == OIDC["issuer"]
    assert "MACHIAVELOX_TOKEN_KEY" not in gateway  # oidc only: no key to mint tokens with
    both = render({"global": {"identity": {"mode": "both", "oidc": OIDC}}})
    assert "MACHIAVELOX_TOKEN_KEY" in env_of(both, "gateway")
    assert "MACHIAVELOX_OIDC_ISSUER" not in env_of(render(), "matchmaking")


@pytest.mark.parametrize(("values", "message"), [
    ({"gateway": {"devLogin": {"enabled": True}}},
     "gateway.devLogin.enabled is true but global.environment is production"),
    ({**value_set("production"), "gateway": {"devLogin": {"enabled": True}}},
     "gateway.devLogin.enabled is true but global.environment is production"),
    ({"global": {"environment": "development", "identity": {"mode": "oidc", "oidc": OIDC}},
      "gateway": {"devLogin": {"enabled": True}}},
     "gateway.devLogin.enabled needs global.identity.mode hmac or both"),
    ({"global": {"identity": {"mode": "oidc"}}},
     "global.identity.mode is oidc: set global.identity.oidc.issuer and "
     "global.identity.oidc.audience"),
    ({"global": {"identity": {"mode": "both", "oidc": {"issuer": OIDC["issuer"]}}}},
     "global.identity.mode is both: set"),
])
def test_impossible_identity_values_fail_with_a_message(values: dict[str, Any],
                                                        message: str) -> None:
    with pytest.raises(helm.HelmRenderError) as refused:
        install(values)
    assert message in str(refused.value)


@pytest.mark.parametrize(("values", "where"), [
    ({"global": {"environment": "staging"}}, "/global/environment"),
    ({"global": {"identity": {"mode": "jwt"}}}, "/global/identity/mode"),
    ({"global": {"identity": {"oidc": {"leewaySeconds": 3600}}}},
     "/global/identity/oidc/leewaySeconds"),
    ({"gateway": {"devLogin": {"rate": 0}}}, "/gateway/devLogin/rate"),
])
def test_the_schema_rejects_wrong_identity_values(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError) as refused:
        install(values)
    assert f"at '{where}'" in str(refused.value)
