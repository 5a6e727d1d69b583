"""Block Kit and Slack's text rules, pure, for both sides: the bot's messages, the approval
card, the question form, task chunks, splitting long answers, escaping, neutralising
broadcasts, and Slack's size limits."""
