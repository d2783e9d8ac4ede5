#!/bin/bash
# Writes the messy customer export /app/data/customers_raw.csv (fixed content).
# Note: some fields intentionally carry leading/trailing spaces and tabs.
set -euo pipefail
mkdir -p /app/data
cat > /app/data/customers_raw.csv <<'CSVEOF'
id,name,email,phone,signup_date,country
101, Rosa  Levi	, Rosa.levi@corp.example.org  ,556.350.0493,01/21/2022,United States
102,Yusuf Garcia	,Yusuf.garcia@example.com ,+1 843 875 1833,17 Feb 2023,CA
103,  qUINN  sILVA	,quinn.silva@mail.test  ,,23.05.2023,Canada
104,gEORGE   yILMAZ	,GEORGE.YILMAZ@EXAMPLE.COM  ,+15668541627,10 Jan 2023,usa
105, Marco Ortiz, marco.ortiz@example.com  ,(878) 701-0312,12.09.2023,US
106,qUINN   sILVA,quinn.silva@mail.test  ,,05/23/2023,Canada
107,Ben  Rossi, ben.rossi@mail.test,677.481.8241,01/11/2022,usa
108,BEN   ROSSI	, ben.rossi@corp.example.org  ,2515788874,2022-09-01,Deutschland
109, OSKAR LIND, oskar.lind@corp.example.org  ,730.877.9322,29.05.2022,Great Britain
110, zoe   ruiz	, zoe.ruiz@mail.test,2513971406,5 Sep 2022,US
111,Nadia   Ivanov	,Nadia.ivanov@mail.test  ,397-431-4111,18.01.2022,Canada
112,Lena  Brown	, Lena.brown@corp.example.org,786-519-6654,07/22/2023,GB
113,  Eva  Kelly, Eva.kelly@mail.test  ,(628) 627-3766,02/05/2022,uk
114, nADIA  iVANOV,NADIA.IVANOV@MAIL.TEST  ,(397) 431-4111,01/18/2022,CA
115,  uMAR  dEMIR, umar.demir@corp.example.org ,1-757-611-6345,2023-08-05,Great Britain
116, cHLOE hALE	, CHLOE.HALE@CORP.EXAMPLE.ORG ,+1 372 674 3874,02/16/2022,CA
117,  bEN rOSSI, Ben.rossi@corp.example.org  ,(251) 578-8874,2022-09-01,germany
118, FARAH GRECO	, FARAH.GRECO@CORP.EXAMPLE.ORG  ,712.886.2518,2022-08-04,Deutschland
119,  dMITRI hADDAD	,dmitri.haddad@example.com ,685.798.1144,05.12.2022,CA
120, Tova  Novak	, tova.novak@mail.test  ,+17013328040,22.02.2022,Deutschland
121, Kemal Vogel ,Kemal.vogel@mail.test  ,422-936-2026,28.11.2022,Deutschland
122,  Ximena   Becker, ximena.becker@corp.example.org,279.252.3189,2022-01-11,germany
123,  Vera   Tanaka , vera.tanaka@example.com  ,+1 568 317 1803,25 Jan 2023,Deutschland
124, Samir Martin,samir.martin@example.com ,568.948.0366,28 Aug 2023,united states 
125,Marco   Ortiz ,MARCO.ORTIZ@EXAMPLE.COM ,+1 878 701 0312,2023-09-12,USA
126,UMAR  DEMIR ,umar.demir@corp.example.org ,+17576116345,05.08.2023,GB
127, Jonas  Sharma	,Jonas.sharma@example.com ,564.931.2614,2023-03-26,united states 
128,  bEN  rOSSI,ben.rossi@mail.test,+16774818241,01/11/2022,United States
129,  Farah   Greco	,farah.greco@corp.example.org,712-886-2518,2022-08-04,DE
130,Lucia   Berg,lucia.berg@corp.example.org,+17932677429,3 Jan 2023,canada
131, eVA kELLY , Eva.kelly@mail.test,+1 628 627 3766,2022-02-05,United Kingdom
132,ANA LOPEZ, Ana.lopez@example.com  ,+14814892186,18 Jun 2022,USA
133,pRIYA aDAMS ,priya.adams@example.com  ,923.946.8103,06/19/2022,de
134,aNA  lOPEZ	, Ana.lopez@example.com,4814892186,18.06.2022,United States
135, ana lopez ,ana.lopez@mail.test,+1 270 818 2449,2023-09-01,US
136,INES   SCHMIDT	, INES.SCHMIDT@CORP.EXAMPLE.ORG  ,(828) 317-0483,05.07.2022,Canada
137,  Mateo  Farouk,MATEO.FAROUK@EXAMPLE.COM,+1 762 648 3657,13 Sep 2023,Great Britain
138, WES NASSER ,WES.NASSER@MAIL.TEST  ,,4 Sep 2022,canada
139, HIRO   COSTA	, HIRO.COSTA@MAIL.TEST ,+1 446 212 2108,2023-07-11,USA
CSVEOF
