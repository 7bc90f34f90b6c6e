module example.com/billing

go 1.19

require example.com/units v1.2.0
