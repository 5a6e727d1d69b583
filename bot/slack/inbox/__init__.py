"""What people wrote, as the model reads it: messages, files, forwards, threads the bot
joins, and the replies it only listens to."""
