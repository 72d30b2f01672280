"""What a job's likely slips and its card's readers are told: a token Signoff does not
know, and what withdrawing a job's card does."""

from __future__ import annotations

from requests_jobs import Jobs

from bot.api.request_records import REQUESTS_PATH


async def test_a_jobs_card_says_withdrawing_it_tells_the_job_not_that_a_run_ends(
    jobs: Jobs,
) -> None:
    """In Slack only an admin can withdraw a job's request: its requester is a client."""
    status, _ = await jobs.ask()
    assert status == 201
    [menu] = [e for e in jobs.card()["blocks"][-1]["elements"] if e["type"] == "overflow"]
    assert menu["confirm"]["text"]["text"] == (
        "The job that asked is told it was withdrawn. Only a Signoff admin can withdraw it here."
    )


async def test_a_token_made_on_another_redis_is_refused_saying_that_may_be_why(
    jobs: Jobs,
) -> None:
    """``signoff token create`` without the bot's REDIS_URL stores the token elsewhere."""
    elsewhere = {"Authorization": "Bearer sgn_" + "x" * 43}
    status, refused = await jobs.get(f"{REQUESTS_PATH}/req_{'0' * 32}", headers=elsewhere)
    assert status == 401
    assert "on another Redis than this server's REDIS_URL" in refused["error"]
