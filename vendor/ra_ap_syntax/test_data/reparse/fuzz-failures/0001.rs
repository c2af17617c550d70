0
1

bb"