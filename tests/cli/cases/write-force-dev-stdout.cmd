# -f on /dev/stdout writes through it (to what stdout is), as for any name
# under /dev and /proc: nothing is created or replaced in /dev.
# (the small trace records lost events: tracy-info's exit status 6)
tracegen --fixed small -f -o /dev/stdout > piped.tracy &&
    { tracy-info piped.tracy > /dev/null 2>&1; [ $? -eq 6 ]; } &&
    echo "written through /dev/stdout"
ls -A /dev | grep -c '\.tmp$'
test -L /dev/stdout && echo "/dev/stdout is still a link"
