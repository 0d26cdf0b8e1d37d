-- The floor of a key layout (scripts/bench-scripts.sh's floor5 and floor3,
-- tollgate-bench table's floor3): read and write each key once, with no
-- logic and no sorted sets; one TIME, as a check reads the clock.
redis.call('TIME')
for i = 1, #KEYS do
  redis.call('GET', KEYS[i])
  redis.call('SET', KEYS[i], ARGV[1], 'PX', '86400000')
end
return 1
