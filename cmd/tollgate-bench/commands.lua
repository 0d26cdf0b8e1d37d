-- The floor of tollgate's own key layout (tollgate-bench table's commands
-- row): the Redis commands one fresh login check with every signal sends,
-- with no logic around them. TestCommands_AreAFreshChecksCommands holds
-- them to what the check script runs, command by command.
--
-- KEYS     the known network's record, the account's counter, the address's
--          bucket, its spray log, its failure log, the password's spray log,
--          the address's credential-stuffing log (a check only reads it)
-- ARGV     the counter's new value, a member for the logs
redis.call('TIME')
redis.call('ZCOUNT', KEYS[1], '(1788529446822', '+inf')
redis.call('GET', KEYS[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', '86400000')
redis.call('GET', KEYS[3])
redis.call('SET', KEYS[3], '1796305446872', 'PX', '50')
for i = 4, 6 do
  redis.call('ZCARD', KEYS[i])
  redis.call('ZADD', KEYS[i], '1796305446822', ARGV[2])
  redis.call('PEXPIRE', KEYS[i], '86400000')
end
redis.call('ZCOUNT', KEYS[7], '(1796219046822', '+inf')
return 1
